package runner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// namedGrammar gives the variables names a grammar of their own when an
// administrator allows them with env_allow.
type namedGrammar struct {
	names   []string
	grammar grammar
}

// namedGrammars are the grammars of a few variables administrators commonly
// add; every other variable allowed by env_allow gets wordGrammar.
func namedGrammars() []namedGrammar {
	return []namedGrammar{
		{[]string{"LANGUAGE", "LINGUAS"}, languageGrammar()},
		{[]string{"COLORTERM"}, termGrammar()},
		{[]string{"GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"}, personGrammar()},
		{[]string{"GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"}, dateGrammar()},
	}
}

// grammarFor returns the grammar of the values of the variable name: the
// built-in allowlist's for its variables, a named one for a few variables
// administrators commonly add, and the conservative default otherwise.
func grammarFor(name string) grammar {
	for _, e := range builtinAllow() {
		if matchAllow(e.pattern, name) {
			return e.grammar
		}
	}
	for _, n := range namedGrammars() {
		if slices.Contains(n.names, name) {
			return n.grammar
		}
	}
	return wordGrammar()
}

// grammar is the set of values a variable accepts.
type grammar struct {
	// accepts completes "NAME accepts ...", saying what is accepted.
	accepts string
	// check says what is wrong with v, or "" when v is accepted.
	check func(v string) string
}

// badByte describes the first byte (or character) of v that ok refuses, or
// returns "" when there is none. The value itself is never quoted: it may be
// long or hostile, and the description goes to the agent, the daemon log and
// the audit log.
func badByte(v string, ok func(r rune) bool) string {
	for i, r := range v {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(v[i:]); size <= 1 {
				return fmt.Sprintf("byte %d is not valid UTF-8", i)
			}
		}
		if !ok(r) {
			return fmt.Sprintf("byte %d is %s, which is not allowed", i, strconv.QuoteRuneToASCII(r))
		}
	}
	return ""
}

// tooLong describes v when it is longer than maxLen bytes, or returns "".
func tooLong(v string, maxLen int) string {
	if len(v) > maxLen {
		return fmt.Sprintf("it is %d bytes long, more than %d", len(v), maxLen)
	}
	return ""
}

func isASCIILetter(r rune) bool { return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' }
func isASCIIDigit(r rune) bool  { return '0' <= r && r <= '9' }
func isASCIIAlnum(r rune) bool  { return isASCIILetter(r) || isASCIIDigit(r) }

// enumGrammar accepts exactly one of values.
func enumGrammar(values ...string) grammar {
	return grammar{
		accepts: "one of: " + strings.Join(values, ", "),
		check: func(v string) string {
			if slices.Contains(values, v) {
				return ""
			}
			if p := badByte(v, isASCIIAlnum); p != "" {
				return p
			}
			if p := tooLong(v, 32); p != "" {
				return p
			}
			if v == "" {
				return "it is empty"
			}
			return "it is not one of the accepted values"
		},
	}
}

// debconfFrontends are the debconf frontends a request may choose (the
// modules under /usr/share/perl5/Debconf/FrontEnd/ that can be chosen, less
// those of [debconfRefusedFrontends]).
func debconfFrontends() []string {
	return []string{"noninteractive", "readline", "dialog", "teletype", "text", "gnome", "kde", "editor", "passthrough"}
}

// debconfRefusedFrontends are debconf frontends that a request may never
// choose, each with why. The web frontend serves root's questions on
// http://127.0.0.1:8001/ and takes the answers from whoever connects first:
// the agent itself, or any other local user, would answer the questions of a
// package a rule lets configure "noninteractively".
func debconfRefusedFrontends() map[string]string {
	return map[string]string{
		"web": "the web frontend serves root's debconf questions on a local TCP port and takes the answers from any local user",
	}
}

// debconfGrammar accepts a debconf frontend name, in lower case or with an
// upper-case first letter, the two spellings debconf itself accepts; the
// frontends of [debconfRefusedFrontends] are refused, saying why.
func debconfGrammar() grammar {
	values := debconfFrontends()
	for _, f := range debconfFrontends() {
		values = append(values, strings.ToUpper(f[:1])+f[1:])
	}
	g := enumGrammar(values...)
	g.accepts = "a debconf frontend: " + strings.Join(debconfFrontends(), ", ") + " (lower case, or with an upper-case first letter; never web)"
	enum := g.check
	g.check = func(v string) string {
		if why, refused := debconfRefusedFrontends()[strings.ToLower(v)]; refused && enum(strings.ToLower(v)) != "" {
			return why
		}
		return enum(v)
	}
	return g
}

// needrestartGrammar accepts needrestart's restart modes: (l)ist only,
// (i)nteractive, (a)utomatic. needrestart itself accepts nothing else.
func needrestartGrammar() grammar {
	g := enumGrammar("a", "l", "i")
	g.accepts = "a needrestart mode: a (restart automatically), l (list only) or i (interactive)"
	return g
}

// maxLocaleLen bounds a locale name; real ones are far shorter.
const maxLocaleLen = 64

// localeGrammar accepts an empty value (the category is then unset), C,
// POSIX, or language[_TERRITORY][.codeset][@modifier] with a two- or
// three-letter lower-case language, a territory of two upper-case letters
// or three digits, and a codeset and modifier of letters, digits, '-' and
// '_'. No '/', so no locale is read from a file the agent chose.
func localeGrammar() grammar {
	return grammar{
		accepts: "an empty value, C, POSIX or a locale name like en_US.UTF-8, C.UTF-8 or de_DE@euro (language[_TERRITORY][.codeset][@modifier], letters, digits, '-' and '_'; no '/'), at most 64 bytes",
		check: func(v string) string {
			if p := tooLong(v, maxLocaleLen); p != "" {
				return p
			}
			if p := badByte(v, func(r rune) bool { return isASCIIAlnum(r) || strings.ContainsRune("_.@-", r) }); p != "" {
				return p
			}
			if v == "" || validLocale(v) {
				return ""
			}
			return "it is not a locale name"
		},
	}
}

// validLocale reports whether v is C, POSIX or a locale name as
// localeGrammar describes.
func validLocale(v string) bool {
	rest, modifier, hasMod := strings.Cut(v, "@")
	if hasMod && !isCodeToken(modifier) {
		return false
	}
	base, codeset, hasCodeset := strings.Cut(rest, ".")
	if hasCodeset && !isCodeToken(codeset) {
		return false
	}
	if base == "C" || base == "POSIX" {
		return true
	}
	lang, terr, hasTerr := strings.Cut(base, "_")
	if len(lang) < 2 || len(lang) > 3 || strings.IndexFunc(lang, func(r rune) bool { return r < 'a' || r > 'z' }) >= 0 {
		return false
	}
	if !hasTerr {
		return true
	}
	upper := len(terr) == 2 && strings.IndexFunc(terr, func(r rune) bool { return r < 'A' || r > 'Z' }) < 0
	digits := len(terr) == 3 && strings.IndexFunc(terr, func(r rune) bool { return !isASCIIDigit(r) }) < 0
	return upper || digits
}

// isCodeToken reports whether s is a codeset or modifier: an ASCII letter or
// digit followed by letters, digits, '-' and '_'.
func isCodeToken(s string) bool {
	if s == "" || !isASCIIAlnum(rune(s[0])) {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool { return !isASCIIAlnum(r) && r != '-' && r != '_' }) < 0
}

// languageGrammar accepts LANGUAGE's form: locale names separated by ':'.
func languageGrammar() grammar {
	return grammar{
		accepts: "locale names separated by ':', like de_DE:de:en",
		check: func(v string) string {
			if p := tooLong(v, 4*maxLocaleLen); p != "" {
				return p
			}
			if p := badByte(v, func(r rune) bool { return isASCIIAlnum(r) || strings.ContainsRune("_.@-:", r) }); p != "" {
				return p
			}
			for l := range strings.SplitSeq(v, ":") {
				if l != "" && !validLocale(l) {
					return "it is not a list of locale names"
				}
			}
			return ""
		},
	}
}

// tzGrammar accepts a time zone name as tzdata spells them: components of
// ASCII letters, digits, '.', '_', '+' and '-', each starting with a letter,
// separated by single '/' (Europe/Paris, UTC, Etc/GMT+1,
// America/Argentina/Buenos_Aires). No leading '/' or ':' (which name a file),
// no "..", and no ',' or '<', so no POSIX rule with daylight-saving dates.
// Whether the zone exists is not checked: glibc reads a name it finds no
// zone file for as a POSIX offset (XYZ-3), or as UTC, and reads no other
// file.
func tzGrammar() grammar {
	return grammar{
		accepts: "a time zone name like UTC, Europe/Paris or Etc/GMT+1: letters, digits and . _ + -, in components that start with a letter, separated by '/' (no leading '/' or ':'; a name without a zone file, like XYZ-3, is a fixed offset), at most 64 bytes",
		check: func(v string) string {
			if p := tooLong(v, 64); p != "" {
				return p
			}
			if v == "" {
				return "it is empty (leave TZ out for the system's zone)"
			}
			if p := badByte(v, func(r rune) bool { return isASCIIAlnum(r) || strings.ContainsRune("/._+-", r) }); p != "" {
				return p
			}
			if v[0] == '/' {
				return "byte 0 is '/', which is not allowed at the start (it names a file)"
			}
			for c := range strings.SplitSeq(v, "/") {
				if c == "" || !isASCIILetter(rune(c[0])) {
					return "a component is empty or does not start with a letter"
				}
			}
			return ""
		},
	}
}

// termGrammar accepts a terminal type name: an ASCII letter or digit, then
// letters, digits, '.', '_', '+' and '-' (xterm-256color, screen.xterm,
// vt100, dumb), at most 64 bytes. No '/', so no terminal description is
// read from a file the agent chose.
func termGrammar() grammar {
	return grammar{
		accepts: "a terminal type like xterm-256color or dumb: letters, digits and . _ + -, starting with a letter or digit, at most 64 bytes",
		check: func(v string) string {
			if p := tooLong(v, 64); p != "" {
				return p
			}
			if v == "" {
				return "it is empty"
			}
			if p := badByte(v, func(r rune) bool { return isASCIIAlnum(r) || strings.ContainsRune("._+-", r) }); p != "" {
				return p
			}
			if !isASCIIAlnum(rune(v[0])) {
				return "it does not start with a letter or digit"
			}
			return ""
		},
	}
}

// maxWordLen bounds the values of variables an administrator allows.
const maxWordLen = 1024

// wordGrammar is the default for variables an administrator allows with
// env_allow: ASCII letters, digits and _ . , : / @ % + = -, at most
// maxWordLen bytes. It has no white space, quotes, or shell or Perl
// metacharacters; docs/execution.md ("Values") says why.
func wordGrammar() grammar {
	return grammar{
		accepts: fmt.Sprintf("ASCII letters, digits and _ . , : / @ %% + = - only, at most %d bytes (the default for variables allowed by env_allow)", maxWordLen),
		check: func(v string) string {
			if p := tooLong(v, maxWordLen); p != "" {
				return p
			}
			return badByte(v, func(r rune) bool { return isASCIIAlnum(r) || strings.ContainsRune("_.,:/@%+=-", r) })
		},
	}
}

// personGrammar accepts a person's name for git: letters and digits of any
// script, combining marks, spaces and . , ' _ @ + -, at most 256 bytes.
func personGrammar() grammar {
	return grammar{
		accepts: "a person's name: letters and digits of any script, spaces and . , ' _ @ + - only, at most 256 bytes",
		check: func(v string) string {
			if p := tooLong(v, 256); p != "" {
				return p
			}
			return badByte(v, func(r rune) bool {
				return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || strings.ContainsRune(" .,'_@+-", r)
			})
		},
	}
}

// dateGrammar accepts a date as git reads it: "1700000000 +0100",
// "2005-04-07T22:13:13+02:00", "Thu, 07 Apr 2005 22:13:13 +0200".
func dateGrammar() grammar {
	return grammar{
		accepts: "a date: ASCII letters, digits, spaces and : + - . , only, at most 64 bytes",
		check: func(v string) string {
			if p := tooLong(v, 64); p != "" {
				return p
			}
			return badByte(v, func(r rune) bool { return isASCIIAlnum(r) || strings.ContainsRune(" :+-.,", r) })
		},
	}
}
