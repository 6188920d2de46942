// Package termtext turns untrusted strings into text that is safe to print on
// a terminal, and renders argument vectors as shell command lines for
// display.
//
// The agent controls every string of a request, and a human reads them in a
// terminal before a command runs as root: control sequences, bidirectional
// and invisible characters, invalid UTF-8 and characters whose width the
// programs in between disagree on could make the human see something other
// than what runs. docs/approving.md ("What the console shows, and what it
// refuses to show") tells that story for the human, and docs/security.md
// lists the promises, their tests and what this package does not cover.
//
// Every untrusted string must pass through this package before it reaches
// a terminal: [Escape] for free text, [EscapeStrict] for what must be read
// exactly (paths, directories, environment, names), [Quote] for one
// argument, and [CommandLine] for a whole pipeline. [Wrap] breaks the
// result into lines and [Width] measures it; a user interface must lay out
// every line with Width and never rely on a library's own truncation.
// [Esc] and [EscStrict] are Escape and EscapeStrict for callers that do not
// need to know whether anything was escaped, and [ASCIIJSON] makes JSON text
// (the audit log's lines, --json output) ASCII with the same meaning.
// [Plural] is for the counts in the messages around them.
//
// # Rules
//
// [Escape] reads s from left to right, one character at a time, where a
// character is a UTF-8 encoded rune or, where the bytes are not valid UTF-8,
// a single byte. The first rule that applies decides. In the examples, the
// input is a Go string literal and the output is shown as printed.
//
//  1. A backslash (U+005C) becomes \\ (two backslashes).
//  2. TAB, LF and CR become \t, \n and \r.
//  3. Every other C0 control (U+0000 to U+001F) and DEL (U+007F) becomes
//     \xNN, two lowercase hex digits: ESC is \x1b, BEL is \x07, NUL is
//     \x00, DEL is \x7f.
//  4. Every byte that is not part of a valid UTF-8 encoding becomes \xNN,
//     one escape per byte: "\xff\xfe" is \xff\xfe. This covers stray
//     continuation bytes (a raw 0x9B is \x9b), truncated sequences,
//     overlong encodings ("\xc0\xaf" is \xc0\xaf), encoded surrogates
//     ("\xed\xa0\x80" is \xed\xa0\x80) and values above U+10FFFF.
//  5. The runes of classes (a) to (f) become \uNNNN (four lowercase hex
//     digits) when they are at most U+FFFF and \UNNNNNNNN (eight) otherwise:
//     U+202E is \u202e, U+E0041 is \U000e0041. (a) C1 controls, U+0080 to
//     U+009F: \u009b is CSI, \u0085 is NEL. (b) Every format character
//     (category Cf), which includes the bidi controls U+061C, U+200E,
//     U+200F, U+202A to U+202E and U+2066 to U+2069, the zero-width
//     characters U+200B to U+200D and U+2060 to U+2064, U+FEFF, U+00AD (soft
//     hyphen), U+180E and the tag characters U+E0001 and U+E0020 to U+E007F.
//     (c) Every private-use (Co), surrogate (Cs) and unassigned (Cn) code
//     point, noncharacters such as U+FFFE included; "unassigned" is judged by
//     the Unicode tables of the Go release that built the binary (Unicode
//     15.0.0 for Go 1.26), so a rune added to Unicode later is escaped until
//     the tables know it. (d) Every separator (category Z) except U+0020
//     SPACE: the no-break spaces U+00A0 and U+202F, the other spaces U+1680,
//     U+2000 to U+200A, U+205F and U+3000, U+2028 LINE SEPARATOR and U+2029
//     PARAGRAPH SEPARATOR. (e) Variation selectors (U+180B to U+180D,
//     U+180F, U+FE00 to U+FE0F, U+E0100 to U+E01EF), the other
//     default-ignorable code points that are not format characters (U+034F,
//     U+115F, U+1160, U+17B4, U+17B5, U+3164, U+FFA0), and U+2800 BRAILLE
//     PATTERN BLANK: all of these display as nothing or as a blank. Emoji
//     sequences lose their joiners and selectors: "❤\ufe0f" is ❤\ufe0f.
//     (f) Characters no width can be given to, because they combine with
//     their neighbours differently from one program to the next or a
//     width table gives them more than 2 columns: the Hangul conjoining
//     jamo (U+1100 to U+11FF, U+A960 to U+A97F, U+D7B0 to U+D7FF), U+2E3A
//     and U+2E3B (3 and 4 columns in uniseg), the regional indicators
//     U+1F1E6 to U+1F1FF (pairs make flags), the emoji modifiers U+1F3FB to
//     U+1F3FF, the tone marks U+302A to U+302F, every combining mark outside
//     the basic plane, and the characters added in Unicode 15.0 that
//     glibc 2.36 does not know (tmux draws nothing for them): "🇫🇷" is
//     \U0001f1eb\U0001f1f7.
//  6. A combining mark (category M: Mn, Mc or Me) passes through only if
//     it has a base: the character right before it in s passed through
//     unchanged and is neither a mark, SPACE, an apostrophe (U+0027) nor
//     a backslash, or is a mark that itself passed through under this
//     rule; and at most 3 marks pass on one base. Any other mark is
//     escaped as in rule 5, as is every mark after it until the next
//     base: "\u0301x" is \u0301x, "e\u0301" passes (é), "'\u0301" is
//     '\u0301, and "a" followed by five marks keeps three and escapes
//     two.
//  7. Everything else passes through unchanged: printable ASCII (U+0020
//     to U+007E) other than the backslash, and every letter, number,
//     punctuation character and symbol of any script: café, 日本語, Ελληνικά,
//     العربية, 😀 (U+1F600), and U+FFFD itself, except those of rule 5
//     (f).
//
// # Strict rules
//
// [EscapeStrict] applies the rules above and two more, so that what it
// passes has one width every terminal agrees on and reads the same
// everywhere. It is for command lines (through [Quote] and [CommandLine]),
// program paths, directories, environment variables, ids and user names.
//
//  8. A character passes only if it is printable ASCII, or is in the basic
//     plane or among the CJK ideographs of planes 2 and 3 (U+20000 to
//     U+3134F), and is none of: East Asian Ambiguous (é, ß, ·, •, ─, most
//     Greek and Cyrillic letters: 1 column in most terminals, 2 in CJK
//     locales and in terminals set to "ambiguous is wide"), an
//     Extended_Pictographic character (☺, ⚠, ↪: text or emoji, 1 or 2
//     columns), a Yijing hexagram U+4DC0 to U+4DFF (2 columns in glibc,
//     Neutral in Unicode 15), U+FF9E or U+FF9F (0 columns in uniseg), or a
//     spacing combining mark (category Mc: 0 columns in uniseg, 1 in
//     glibc). Outside the basic plane that excludes every emoji.
//  9. At most one combining mark passes on one base.
//
// Everything else is escaped as in rule 5 and sets the flag: "café" is
// caf\u00e9, the Cyrillic look-alike in "/usr/bin/pаsswd" is \u0430,
// "😀" is \U0001f600. Fullwidth letters, CJK, kana and Hangul syllables
// pass: every table agrees they are 2 columns.
//
// # Programs and options
//
// [EscapeASCII] applies the strict rules and one more. [QuoteProgram] and
// [CommandLine] use it for program paths (a command's first word), and
// [Quote] for arguments that look like options ([LooksLikeOption]: they
// start with "-", another dash or a minus sign).
//
//  10. Every character outside ASCII is escaped as in rule 5 and sets the
//     flag. Programs that run as root and their options are almost always
//     ASCII; a letter of another script there is more likely a look-alike
//     than an honest name: "--ԁry-run" with U+0501 CYRILLIC SMALL LETTER
//     KOMI DE (not East Asian Ambiguous, so rule 8 passes it) reads
//     --\u0501ry-run, "/usr/bin/іd" with U+0456 reads /usr/bin/\u0456d, a fullwidth
//     "/usr/bin/ｒｍ" reads /usr/bin/\uff52\uff4d, and an argument starting
//     with U+2013 EN DASH ("–rf", which a careless eye reads as an option)
//     reads \u2013rf.
//
// # Widths
//
// [Width] counts the characters EscapeStrict passes at the width every
// table agrees on (1, or 2 for East Asian Wide and Fullwidth, 0 for a
// combining mark), and every other character Escape passes at 2, the most
// any table gives it; escapes count one column per byte. A line of n
// columns by Width therefore takes at most n columns in bubbletea and
// lipgloss (uniseg), in go-runewidth inside and outside East Asian locales,
// and in glibc's wcwidth (tmux, xterm, VTE), and exactly n when it holds
// only what EscapeStrict passes. TestWidthTablesAgree checks that claim for
// every code point against each of those tables.
//
// # The flag
//
// Escape's bool result is true when any rule other than rule 1 applied: it
// answers "did this string contain something that had to be hidden from the
// terminal?" and is what a user interface should turn into a warning. A
// backslash alone does not set it: backslashes are common and harmless
// (regular expressions, printf formats, Windows paths) and doubling them
// changes nothing the terminal does.
//
// # Why backslashes are doubled
//
// Rule 1 makes every backslash in the output the start of exactly one of
// \\, \t, \n, \r, \xNN, \uNNNN or \UNNNNNNNN, so the rendering is
// unambiguous: an agent cannot send the four characters `\x1b` and have them
// pass for an escaped ESC, and reading the output back (the inverse of the
// rules above) restores s byte for byte. The price is that free text with
// backslashes reads doubled (C:\\Windows); in command lines [Quote] shows
// arguments in the shell's own notation instead, where a backslash inside
// '...' is literal and needs no doubling.
//
// # Consequences
//
// Escape's output is valid UTF-8 and contains no control character (C0,
// DEL, C1), no format, private-use, surrogate or unassigned code point, no
// separator other than SPACE, no variation selector or other
// default-ignorable code point, no combining mark without a base, and no
// character of rule 5 (f); EscapeStrict's output also holds only characters
// every width table agrees on (rules 8 and 9). Escape
// sequences of every kind (CSI "\x1b[2J", OSC "\x1b]0;title\x07", OSC 8
// hyperlinks, DCS, APC, the 8-bit forms) are neutralised because their
// introducer is escaped: the terminal receives the literal text \x1b[2J.
// Escaping an escaped string escapes its backslashes again and nothing else.
//
// To show multi-line free text on several lines, split the raw string on
// "\n" and escape each piece; never print a raw piece.
//
// # What this package does not do
//
// It lets look-alike characters of other scripts through outside program
// paths and options, right-to-left letters through, and is only as exact
// as the width tables it is checked against: docs/security.md ("What it
// does not protect against") says what follows.
package termtext
