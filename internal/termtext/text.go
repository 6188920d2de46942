package termtext

// Esc is [Escape] for callers that do not need to know whether anything
// was escaped.
func Esc(s string) string {
	e, _ := Escape(s)
	return e
}

// EscStrict is [EscapeStrict] for callers that do not need to know whether
// anything was escaped.
func EscStrict(s string) string {
	e, _ := EscapeStrict(s)
	return e
}

// Plural returns word when n is 1 and word followed by "s" otherwise, for
// counts in messages: "1 file", "2 files", "0 files".
func Plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
