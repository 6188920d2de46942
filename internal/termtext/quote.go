package termtext

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Quote returns arg as one shell word that is safe to print and that, pasted
// into bash (or zsh, or ksh93), is read back as exactly arg, and whether
// EscapeStrict had to escape anything in arg. The word takes the first of
// these forms that fits:
//
//   - ANSI-C quoting, a dollar sign and arg between apostrophes, if
//     EscapeStrict escapes anything other than a backslash: the text
//     between the apostrophes is EscapeStrict's rendering, with each
//     apostrophe in it written as a backslash and an apostrophe;
//   - two apostrophes for the empty string;
//   - arg itself if it is a plain word: only ASCII letters, digits and
//     _ - . / , : + @ % =, and not starting with = (zsh expands =word);
//   - arg between apostrophes otherwise, each apostrophe in it written as
//     apostrophe, backslash, apostrophe, apostrophe. Between apostrophes
//     every character is literal, a backslash included.
//
// For example:
//
//	Quote("")          ''
//	Quote("ls")        ls
//	Quote("a b")       'a b'
//	Quote("it's")      'it'\''s'
//	Quote(`a\.b`)      'a\.b'
//	Quote("\x1b[2J")   $'\x1b[2J'
//	Quote("it's\a")    $'it\'s\x07'
//	Quote("\u202e")    $'\u202e'
//	Quote("\xff")      $'\xff'
//	Quote("café")      $'caf\u00e9'
//
// The escapes are Escape's, so a user interface shows one notation
// everywhere. Bash turns \xNN back into the byte, and \uNNNN and \UNNNNNNNN
// into the rune's UTF-8 encoding provided the pasting shell runs in a UTF-8
// locale (LC_CTYPE); in the C locale bash leaves \u202e as that text. NUL
// cannot be passed in an argument vector, and bash ends a word at \x00.
//
// Quote's result contains nothing EscapeStrict would escape other than
// backslashes, so every character in it has one width on every terminal. Quote is for arguments: a word in command position can mean
// more to a shell (an assignment, a reserved word), and [CommandLine] quotes
// those.
//
// An argument that looks like an option (see [LooksLikeOption]) is escaped
// with [EscapeASCII] instead: every non-ASCII character in it is escaped
// and sets the flag, so "--ԁry-run" with a Cyrillic "ԁ" reads
// $'--\u0501ry-run'.
func Quote(arg string) (string, bool) {
	return quote(arg, LooksLikeOption(arg))
}

// QuoteProgram is [Quote] for a program path (a command's first word, a
// program file the daemon resolved): every non-ASCII character in it is
// escaped ([EscapeASCII]) and sets the flag.
func QuoteProgram(path string) (string, bool) {
	return quote(path, true)
}

// LooksLikeOption reports whether arg starts with "-" or with a character
// that can be taken for one: a dash (Unicode category Pd, such as U+2013
// EN DASH) or a minus sign (U+2212, U+207B, U+208B, U+FE63, U+FF0D).
func LooksLikeOption(arg string) bool {
	r, _ := utf8.DecodeRuneInString(arg)
	switch {
	case arg == "":
		return false
	case r == '-', unicode.Is(unicode.Pd, r):
		return true
	}
	switch r {
	case '\u2212', '\u207b', '\u208b', '\ufe63', '\uff0d':
		return true
	}
	return false
}

// quote is Quote, escaping every non-ASCII character when ascii is set.
func quote(arg string, ascii bool) (string, bool) {
	e, escaped := escapeMode(arg, true, ascii)
	switch {
	case escaped:
		return "$'" + strings.ReplaceAll(e, "'", `\'`) + "'", true
	case arg == "":
		return "''", false
	case isPlainWord(arg):
		return arg, false
	}
	return "'" + strings.ReplaceAll(arg, "'", `'\''`) + "'", false
}

// CommandLine renders a pipeline, one argument vector per stage, as one
// shell command line for display and copy-paste: each argument is rendered
// with [Quote], arguments are separated by one space and stages by " | ".
// It also reports whether any argument needed escapes (see [EscapeStrict]).
//
// The first word of each stage is also single-quoted when it is a plain
// word that a shell would not run as a program: one that contains = (an
// assignment: 'X=1' sh), starts with % (a job), or is a reserved word
// ('if', 'time'). A shell may still run a builtin or function of that name
// (echo, printf, test): to reproduce exactly which program ran, render the
// absolute path the daemon resolved as the first word.
//
// The first word of each stage is a program: like [QuoteProgram], every
// non-ASCII character in it is escaped.
//
// A nil or empty pipeline renders as "". An empty stage renders as nothing
// between its separators, a line a shell rejects as the daemon rejects such
// a pipeline.
func CommandLine(pipeline [][]string) (string, bool) {
	var b strings.Builder
	escaped := false
	for i, stage := range pipeline {
		if i > 0 {
			b.WriteString(" | ")
		}
		for j, arg := range stage {
			var q string
			var e bool
			if j == 0 {
				q, e = quoteCommand(arg)
			} else {
				b.WriteByte(' ')
				q, e = Quote(arg)
			}
			b.WriteString(q)
			escaped = escaped || e
		}
	}
	return b.String(), escaped
}

// QuoteCommand quotes word as CommandLine quotes the first word of a
// stage.
func QuoteCommand(word string) (string, bool) { return quoteCommand(word) }

// quoteCommand is Quote for a word in command position: a program, so
// every non-ASCII character is escaped, as QuoteProgram does.
func quoteCommand(word string) (string, bool) {
	q, escaped := QuoteProgram(word)
	if q == word && (strings.Contains(word, "=") || strings.HasPrefix(word, "%") || isReserved(word)) {
		// A plain word holds no apostrophe.
		return "'" + word + "'", false
	}
	return q, escaped
}

// isPlainWord reports whether s is non-empty, consists only of characters
// no POSIX shell, bash or zsh gives a meaning to in an argument, and does
// not start with =.
func isPlainWord(s string) bool {
	if s == "" || s[0] == '=' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("_-./,:+@%=", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// isReserved reports whether s is a reserved word of bash or zsh made of
// plain-word characters (the others, such as ! { [[, are quoted anyway).
func isReserved(s string) bool {
	switch s {
	case "case", "coproc", "do", "done", "elif", "else", "end", "esac", "fi",
		"for", "foreach", "function", "if", "in", "nocorrect", "repeat",
		"select", "then", "time", "until", "while":
		return true
	}
	return false
}
