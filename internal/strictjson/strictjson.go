// Package strictjson is the one strict reading of JSON that the daemon and
// the web approver share. Object is how the agent socket (package proto)
// and the approver channel (package approval) take a line: exactly one
// object, valid UTF-8, no key given twice, nothing after it, and no escape
// that is not a character, with errors worded for the line. Unmarshal is
// how every message is then decoded, at every depth: keys matched exactly
// (encoding/json matches "Decision" and "deci\u017fion" to "decision"), no
// key given twice in any nested object, strict base64 and RFC 3339 times.
// encoding/json lets the last of two equal keys win and turns a lone UTF-16
// surrogate escape into U+FFFD; a front end, proxy or logger that reads the
// first key or the escape otherwise would see something else than what the
// daemon acts on (docs/security.md, "The wire decoder and the audit log").
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf16"
	"unicode/utf8"
)

// Kind classifies an *Error.
type Kind int

// The kinds of error Object returns.
const (
	// Syntax: not valid JSON, or text after the object.
	Syntax Kind = iota
	// Empty: nothing but white space.
	Empty
	// BadUTF8: not valid UTF-8.
	BadUTF8
	// NotObject: valid JSON that is not an object.
	NotObject
	// Duplicate: a key given more than once; Error.Key names it.
	Duplicate
)

// Error says what is wrong with a line, and where.
type Error struct {
	Kind Kind
	// Key is the repeated key, for Duplicate.
	Key string
	// Detail says what was wrong, with the byte offset when there is one;
	// for Empty, BadUTF8 and NotObject it is a predicate ("is empty; ...")
	// for the caller to give a subject.
	Detail string
}

func (e *Error) Error() string {
	switch e.Kind {
	case Duplicate:
		return fmt.Sprintf("key %q %s", e.Key, e.Detail)
	case Empty, BadUTF8, NotObject:
		return "the line " + e.Detail
	}
	return e.Detail
}

// Object checks that line is exactly one JSON object with no repeated key
// and returns its members undecoded. It does not look for lone surrogates:
// a caller that decodes the members checks each with LoneSurrogate, to name
// the field.
func Object(line []byte) (map[string]json.RawMessage, *Error) {
	if !utf8.Valid(line) {
		off := 0
		for off < len(line) {
			r, size := utf8.DecodeRune(line[off:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			off += size
		}
		return nil, &Error{Kind: BadUTF8, Detail: fmt.Sprintf("is not valid UTF-8 (first bad byte at offset %d)", off)}
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, &Error{Kind: Empty, Detail: "is empty; send one JSON object"}
		}
		return nil, syntaxError(err, dec)
	}
	if tok != json.Delim('{') {
		return nil, &Error{Kind: NotObject, Detail: fmt.Sprintf("must be a JSON object, got %s", tokenKind(tok))}
	}
	fields := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxError(err, dec)
		}
		key := tok.(string) // inside an object the decoder only yields string keys
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, syntaxError(err, dec)
		}
		if _, dup := fields[key]; dup {
			return nil, &Error{Kind: Duplicate, Key: key, Detail: "appears more than once; each key may appear only once"}
		}
		fields[key] = raw
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, syntaxError(err, dec)
	}
	if rest := bytes.TrimLeft(line[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return nil, &Error{Kind: Syntax, Detail: fmt.Sprintf("unexpected data after the JSON object at offset %d; send exactly one object per line", dec.InputOffset())}
	}
	return fields, nil
}

func syntaxError(err error, dec *json.Decoder) *Error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &Error{Kind: Syntax, Detail: fmt.Sprintf("at byte offset %d: %s", se.Offset, se.Error())}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return &Error{Kind: Syntax, Detail: fmt.Sprintf("unexpected end of input at byte offset %d: the JSON object is not complete", dec.InputOffset())}
	}
	return &Error{Kind: Syntax, Detail: err.Error()}
}

func tokenKind(tok json.Token) string {
	switch tok.(type) {
	case json.Delim:
		if tok == json.Delim('[') {
			return "an array"
		}
		return "a delimiter"
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

// LoneSurrogate returns the byte offset in raw, valid JSON text, of the
// first \u escape of a UTF-16 surrogate that is not half of a pair (a high
// one followed at once by an escaped low one), and that escape's text; -1
// and "" if there is none. Such an escape is not a character: encoding/json
// replaces it with U+FFFD, so what a decoder acts on is not what was sent.
func LoneSurrogate(raw []byte) (int, string) {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if i+1 >= len(raw) || raw[i+1] != 'u' {
			i++ // a two-byte escape such as \\ or \"
			continue
		}
		r, ok := hex4(raw, i+2)
		if !ok {
			i++
			continue
		}
		if !utf16.IsSurrogate(r) {
			i += 5
			continue
		}
		if r < 0xdc00 && i+7 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
			if lo, ok := hex4(raw, i+8); ok && 0xdc00 <= lo && lo <= 0xdfff {
				i += 11
				continue
			}
		}
		return i, string(raw[i : i+6])
	}
	return -1, ""
}

// hex4 reads the four hex digits at raw[i:i+4].
func hex4(raw []byte, i int) (rune, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// Describe says in words why the escape esc, at offset off of what, is
// refused.
func Describe(esc string, off int, what string) string {
	return fmt.Sprintf("the escape %s at byte %d of %s is half of a UTF-16 surrogate pair, not a character (a JSON decoder would replace it with U+FFFD); send the character itself or its complete pair", esc, off, what)
}
