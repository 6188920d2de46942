package termtext

import (
	"slices"
	"unicode"

	"golang.org/x/text/width"
)

// maxMarksStrict is maxMarks for [EscapeStrict]: one combining mark per
// base, so that no stack of marks can draw over the line above or below.
const maxMarksStrict = 1

// Width returns the number of terminal columns s takes at most, counted the
// way [Wrap] counts them: s is read in Wrap's units (an escape counts one
// column per byte; a character that Escape would escape counts as its
// escape), a combining mark on a base counts 0 and a spacing mark 1, and
// any other character counts what every width table the console meets
// agrees on if it is in the strict set (see [EscapeStrict]), and 2, the
// most any of them gives it, otherwise. It is the one width function of the
// console and of the CLI's tables: a line of at most n columns by Width
// takes at most n columns on the terminal, in bubbletea and lipgloss
// (uniseg), in go-runewidth (East Asian or not) and in glibc's wcwidth
// (tmux, xterm, VTE).
func Width(s string) int {
	w := 0
	for i, marks := 0, noBase; i < len(s); {
		var u unit
		u, i, marks = nextUnit(s, i, marks)
		w += u.width
	}
	return w
}

// runeWidth returns the columns Width counts for r, a rune that Escape
// passes and that is not a combining mark: its exact width when r is in the
// strict set, and the largest width any table gives it (2) otherwise.
func runeWidth(r rune) int {
	switch {
	case r < 0x7f:
		return 1
	case strictOK(r):
		return eastAsianWidth(r)
	}
	return 2
}

// eastAsianWidth is 2 for East Asian Wide and Fullwidth characters and 1
// for the others.
func eastAsianWidth(r rune) int {
	if r < 0x1100 {
		return 1
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// escapedEverywhere reports whether r, a printable rune, is escaped by
// Escape as well as EscapeStrict because no width can be given to it: it
// combines with its neighbours into something else, or a width table gives
// it more than 2 columns.
func escapedEverywhere(r rune) bool {
	switch {
	case 0x1100 <= r && r <= 0x11ff, 0xa960 <= r && r <= 0xa97f, 0xd7b0 <= r && r <= 0xd7ff:
		// Hangul conjoining jamo: a leading consonant, a vowel and a
		// trailing consonant compose into one syllable in some terminals
		// and in uniseg, and are 2 + 0 + 0 or 2 + 1 + 1 columns elsewhere.
		return true
	case r == 0x2e3a || r == 0x2e3b:
		// TWO-EM and THREE-EM DASH: 3 and 4 columns in uniseg, so bubbletea
		// cuts the end of a line it thinks too wide; 1 everywhere else.
		return true
	case 0x1f1e6 <= r && r <= 0x1f1ff:
		// Regional indicators: two make a flag, 2 columns in uniseg, 2
		// or 4 elsewhere.
		return true
	case 0x1f3fb <= r && r <= 0x1f3ff:
		// Emoji skin tone modifiers: 0 columns after an emoji in uniseg,
		// 2 in glibc.
		return true
	case 0x302a <= r && r <= 0x302f:
		// Ideographic tone marks and Hangul single dot tone marks: 0
		// columns in uniseg, 2 in go-runewidth and glibc.
		return true
	case r > 0xffff && unicode.Is(unicode.M, r):
		// Supplementary-plane marks: glibc does not know the recent ones
		// and disagrees with uniseg on the musical symbols.
		return true
	case inTable(unicode15, r):
		return true
	}
	return false
}

// unicode15 lists the characters added in Unicode 15.0 (the newest the Go
// tables know) that glibc 2.36 (Debian 12) does not know: its wcwidth is
// -1 for them and tmux draws nothing, so they would vanish from the
// screen. TestWidthTablesAgree finds any other character a terminal's
// glibc does not know.
var unicode15 = [][2]rune{
	{0x0cf3, 0x0cf3}, {0x0ece, 0x0ece}, {0x10efd, 0x10eff}, {0x1123f, 0x11241},
	{0x11b00, 0x11b09}, {0x11f00, 0x11f10}, {0x11f12, 0x11f3a}, {0x11f3e, 0x11f59},
	{0x1342f, 0x1342f}, {0x13440, 0x13455}, {0x1b132, 0x1b132}, {0x1b155, 0x1b155},
	{0x1d2c0, 0x1d2d3}, {0x1df25, 0x1df2a}, {0x1e030, 0x1e06d}, {0x1e08f, 0x1e08f},
	{0x1e4d0, 0x1e4f9}, {0x1f6dc, 0x1f6dc}, {0x1f774, 0x1f776}, {0x1f77b, 0x1f77f},
	{0x1f7d9, 0x1f7d9}, {0x1fa75, 0x1fa77}, {0x1fa87, 0x1fa88}, {0x1faad, 0x1faaf},
	{0x1fabb, 0x1fabd}, {0x1fabf, 0x1fabf}, {0x1face, 0x1facf}, {0x1fada, 0x1fadb},
	{0x1fae8, 0x1fae8}, {0x1faf7, 0x1faf8}, {0x2b739, 0x2b739}, {0x31350, 0x323af},
}

// inTable reports whether r is in one of the ranges of table, which are
// sorted.
func inTable(table [][2]rune, r rune) bool {
	i, _ := slices.BinarySearchFunc(table, r, func(e [2]rune, r rune) int {
		switch {
		case r < e[0]:
			return 1
		case r > e[1]:
			return -1
		}
		return 0
	})
	return i < len(table) && table[i][0] <= r && r <= table[i][1]
}

// strictOK reports whether r, a rune that Escape passes and that is not a
// combining mark, may pass EscapeStrict: every width table agrees on its
// width, which is eastAsianWidth(r). TestWidthTablesAgree checks that claim
// against uniseg, go-runewidth and glibc for every rune.
func strictOK(r rune) bool {
	switch {
	case r < 0x7f:
		return true
	case r > 0xffff && !(0x20000 <= r && r <= 0x3134f):
		// Outside the basic plane only the CJK ideographs of planes 2 and
		// 3 up to Unicode 13: the rest is mostly emoji (widths differ by
		// presentation) and scripts newer than the terminal's tables.
		return false
	case width.LookupRune(r).Kind() == width.EastAsianAmbiguous:
		// 1 column in most terminals, 2 in CJK locales and in terminals
		// set to "ambiguous is wide" (and in go-runewidth there).
		return false
	case isPictographic(r):
		// Emoji that have a text presentation by default: 1 column as
		// text, 2 as emoji, and terminals choose differently.
		return false
	case 0x4dc0 <= r && r <= 0x4dff:
		// Yijing hexagram symbols: Neutral in Unicode 15, 2 columns in
		// glibc (Wide since Unicode 16).
		return false
	case r == 0xff9e || r == 0xff9f:
		// Halfwidth katakana sound marks: 0 columns in uniseg, 1
		// elsewhere.
		return false
	}
	return true
}

// pictographic lists the Extended_Pictographic code points of the basic
// plane (Unicode emoji-data.txt); every one of the supplementary planes is
// outside the strict set anyway.
var pictographic = [][2]rune{
	{0x00a9, 0x00a9}, {0x00ae, 0x00ae}, {0x203c, 0x203c}, {0x2049, 0x2049},
	{0x2122, 0x2122}, {0x2139, 0x2139}, {0x2194, 0x2199}, {0x21a9, 0x21aa},
	{0x231a, 0x231b}, {0x2328, 0x2328}, {0x2388, 0x2388}, {0x23cf, 0x23cf},
	{0x23e9, 0x23f3}, {0x23f8, 0x23fa}, {0x24c2, 0x24c2}, {0x25aa, 0x25ab},
	{0x25b6, 0x25b6}, {0x25c0, 0x25c0}, {0x25fb, 0x25fe}, {0x2600, 0x2605},
	{0x2607, 0x2612}, {0x2614, 0x2685}, {0x2690, 0x2705}, {0x2708, 0x2712},
	{0x2714, 0x2714}, {0x2716, 0x2716}, {0x271d, 0x271d}, {0x2721, 0x2721},
	{0x2728, 0x2728}, {0x2733, 0x2734}, {0x2744, 0x2744}, {0x2747, 0x2747},
	{0x274c, 0x274c}, {0x274e, 0x274e}, {0x2753, 0x2755}, {0x2757, 0x2757},
	{0x2763, 0x2767}, {0x2795, 0x2797}, {0x27a1, 0x27a1}, {0x27b0, 0x27b0},
	{0x27bf, 0x27bf}, {0x2934, 0x2935}, {0x2b05, 0x2b07}, {0x2b1b, 0x2b1c},
	{0x2b50, 0x2b50}, {0x2b55, 0x2b55}, {0x3030, 0x3030}, {0x303d, 0x303d},
	{0x3297, 0x3297}, {0x3299, 0x3299},
}

// isPictographic reports whether r is in pictographic.
func isPictographic(r rune) bool {
	return inTable(pictographic, r)
}
