// Package termtext turns untrusted strings into text that is safe to print on
// a terminal, and renders argument vectors as shell command lines for
// display.
//
// Every untrusted string must pass through this package before it reaches
// a terminal: [Escape] for free text, [EscapeStrict] for what must be read
// exactly (paths, directories, environment, names), [EscapeASCII] for
// program paths, [Quote] and [QuoteProgram] for one argument, and
// [CommandLine] for a whole pipeline. [Wrap] breaks the result into lines
// and [Width] measures it; a user interface must lay out every line with
// Width and never rely on a library's own truncation. [Esc] and
// [EscStrict] drop the flag, [ASCIIJSON] makes JSON text ASCII with the
// same meaning, and [Plural] is for the counts in the messages around them.
//
// What it promises: Escape's output is valid UTF-8 with no control
// character (C0, DEL, C1), no format, private-use, surrogate or unassigned
// code point, no separator but SPACE, no default-ignorable code point, no
// combining mark without a base and no character no width fits, and every
// backslash in it starts exactly one escape (\\, \t, \n, \r, \xNN, \uNNNN,
// \UNNNNNNNN), so it reads back to the input byte for byte. EscapeStrict's
// output also holds only characters every width table agrees on, and
// EscapeASCII's only ASCII. The bool result is true when anything but a
// backslash was escaped: what a user interface turns into a warning. A
// line of n columns by Width takes at most n columns in uniseg
// (bubbletea, lipgloss), go-runewidth and glibc's wcwidth (tmux), and
// exactly n when EscapeStrict passes all of it.
//
// The rules, numbered and with examples, and why backslashes are doubled,
// are in docs/approving.md ("The escaping rules"); docs/security.md says
// what they do not protect against.
package termtext
