package proto

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	simdbase64 "github.com/segmentio/asm/base64"
)

// The response decoder is hand-written because a response may carry up to
// 33 base64 strings of 22 MB each. encoding/json scans such a string byte by
// byte several times (validation, decoding, unquoting) before base64 even
// starts, which costs more than a second for one 16 MiB stdout. Here a
// string without escapes is found with bytes.IndexByte and handed straight
// to the base64 decoder. Everything else follows RFC 8259; FuzzDecodeResponse
// checks that whatever this accepts, encoding/json accepts with the same
// meaning.

// maxDepth bounds nesting in unknown fields, as encoding/json does.
const maxDepth = 10000

type respScanner struct {
	b     []byte
	i     int
	depth int
}

func (s *respScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: response is not a valid JSON object: at byte offset %d: %s", ErrProtocol, s.i, fmt.Sprintf(format, args...))
}

func (s *respScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// consume skips white space and then c, or fails.
func (s *respScanner) consume(c byte) error {
	s.ws()
	if s.i >= len(s.b) {
		return s.errorf("unexpected end of input, want %q", c)
	}
	if s.b[s.i] != c {
		return s.errorf("unexpected %q, want %q", s.b[s.i], c)
	}
	s.i++
	return nil
}

func (s *respScanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// rawString returns the bytes between the quotes of the string at s.i and
// whether it contains escapes. It validates the string's syntax.
func (s *respScanner) rawString() (raw []byte, escaped bool, err error) {
	return s.rawStringChecked(true)
}

// rawStringChecked is rawString; checkControls false skips the scan for
// raw control characters, for the base64 caller, which rejects them
// itself more cheaply.
func (s *respScanner) rawStringChecked(checkControls bool) (raw []byte, escaped bool, err error) {
	if err := s.consume('"'); err != nil {
		return nil, false, err
	}
	start := s.i
	rest := s.b[start:]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return nil, false, s.errorf("unterminated string")
	}
	if bytes.IndexByte(rest[:end], '\\') < 0 {
		for _, c := range rest[:end] {
			if !checkControls {
				break
			}
			if c < 0x20 {
				return nil, false, s.errorf("control character 0x%02x in string", c)
			}
		}
		s.i = start + end + 1
		return rest[:end], false, nil
	}
	// Slow path: walk escapes to find the closing quote.
	i := start
	for i < len(s.b) {
		c := s.b[i]
		switch {
		case c == '"':
			s.i = i + 1
			return s.b[start:i], true, nil
		case c < 0x20:
			s.i = i
			return nil, false, s.errorf("control character 0x%02x in string", c)
		case c == '\\':
			if i+1 >= len(s.b) {
				s.i = i
				return nil, false, s.errorf("unterminated escape")
			}
			switch s.b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(s.b) {
					s.i = i
					return nil, false, s.errorf("short \\u escape")
				}
				for _, h := range s.b[i+2 : i+6] {
					if !isHex(h) {
						s.i = i
						return nil, false, s.errorf("bad \\u escape")
					}
				}
				i += 6
			default:
				s.i = i
				return nil, false, s.errorf("bad escape \\%c", s.b[i+1])
			}
		default:
			i++
		}
	}
	s.i = i
	return nil, false, s.errorf("unterminated string")
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// text decodes a JSON string with encoding/json's semantics (escapes,
// invalid UTF-8 replaced). Only short strings come here.
func (s *respScanner) text() (string, error) {
	s.ws()
	start := s.i
	if _, _, err := s.rawString(); err != nil {
		return "", err
	}
	var out string
	if err := json.Unmarshal(s.b[start:s.i], &out); err != nil {
		return "", s.errorf("%v", err)
	}
	return out, nil
}

// base64 decodes a JSON string holding standard base64.
func (s *respScanner) base64() ([]byte, error) {
	raw, escaped, err := s.rawStringChecked(false)
	if err != nil {
		return nil, err
	}
	// The base64 decoder refuses every control character except CR and
	// LF, which it skips; JSON forbids them raw in a string.
	for _, c := range []byte{'\n', '\r'} {
		if i := bytes.IndexByte(raw, c); i >= 0 {
			s.i -= len(raw) + 1 - i
			return nil, s.errorf("control character 0x%02x in string", c)
		}
	}
	if escaped {
		// Only "\/" and \u escapes of base64 characters are plausible;
		// let encoding/json unquote, then decode. An escaped CR or LF
		// unquotes to one, which the base64 decoder would skip: refused
		// here, after unescaping.
		start := s.i - len(raw) - 1
		var str string
		if err := json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &str); err != nil {
			return nil, s.errorf("%v", err)
		}
		if i := strings.IndexAny(str, "\r\n"); i >= 0 {
			s.i = start
			return nil, s.errorf("escaped control character 0x%02x at character %d of a base64 string", str[i], i)
		}
		raw = []byte(str)
	}
	out := make([]byte, strictBase64.DecodedLen(len(raw)))
	n, err := strictBase64.Decode(out, raw)
	if err != nil {
		return nil, fmt.Errorf("%w: response is not a valid JSON object: %v", ErrProtocol, err)
	}
	return out[:n], nil
}

// strictBase64 is the standard alphabet, decoded with the SIMD decoder
// (see the package documentation), refusing non-zero padding bits as
// encoding/json does. '\r' and '\n', which the decoder would skip, are
// refused before it is called.
var strictBase64 = simdbase64.StdEncoding.Strict()

func (s *respScanner) boolean() (bool, error) {
	s.ws()
	switch {
	case bytes.HasPrefix(s.b[s.i:], []byte("true")):
		s.i += 4
		return true, nil
	case bytes.HasPrefix(s.b[s.i:], []byte("false")):
		s.i += 5
		return false, nil
	}
	return false, s.errorf("want true or false")
}

// number returns the text of the JSON number at s.i.
func (s *respScanner) number() ([]byte, error) {
	s.ws()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	intStart := s.i
	if digits() == 0 {
		return nil, s.errorf("want a number")
	}
	if s.b[intStart] == '0' && s.i-intStart > 1 {
		return nil, s.errorf("leading zero in number")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return nil, s.errorf("want digits after the decimal point")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return nil, s.errorf("want digits in the exponent")
		}
	}
	return s.b[start:s.i], nil
}

func (s *respScanner) integer() (int, error) {
	start := s.i
	num, err := s.number()
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(string(num))
	if err != nil {
		s.i = start
		return 0, s.errorf("%q is not an integer", num)
	}
	return n, nil
}

// skip validates and skips any JSON value.
func (s *respScanner) skip() error {
	s.depth++
	defer func() { s.depth-- }()
	if s.depth > maxDepth {
		return s.errorf("nested too deeply")
	}
	switch c := s.peek(); {
	case c == '"':
		_, _, err := s.rawString()
		return err
	case c == '{':
		return s.object(func(string) error { return s.skip() })
	case c == '[':
		return s.array(s.skip)
	case c == 't' || c == 'f':
		_, err := s.boolean()
		return err
	case c == 'n':
		if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
			s.i += 4
			return nil
		}
		return s.errorf("want null")
	default:
		_, err := s.number()
		return err
	}
}

// isNull consumes a null if one is next.
func (s *respScanner) isNull() bool {
	if s.peek() == 'n' && bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// object calls member for each key, positioned at the member's value, and
// refuses repeated keys.
func (s *respScanner) object(member func(key string) error) error {
	if err := s.consume('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	seen := map[string]bool{}
	for {
		key, err := s.text()
		if err != nil {
			return err
		}
		if seen[key] {
			return s.errorf("key %q appears more than once", key)
		}
		seen[key] = true
		if err := s.consume(':'); err != nil {
			return err
		}
		if err := member(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.errorf("want ',' or '}' after an object member")
		}
	}
}

func (s *respScanner) array(elem func() error) error {
	if err := s.consume('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.errorf("want ',' or ']' after an array element")
		}
	}
}

// decodeResponseWire fills w from line, with encoding/json's meaning for
// the known fields (null leaves a field unset) and unknown fields skipped.
func decodeResponseWire(line []byte, w *responseWire) error {
	s := &respScanner{b: line}
	if s.peek() != '{' {
		if s.i >= len(s.b) {
			return s.errorf("empty response")
		}
		return s.errorf("the response is not a JSON object")
	}
	err := s.object(func(key string) error {
		if s.isNull() {
			return nil
		}
		switch key {
		case "id":
			v, err := s.text()
			w.ID = &v
			return err
		case "status":
			v, err := s.text()
			st := Status(v)
			w.Status = &st
			return err
		case "message":
			v, err := s.text()
			w.Message = v
			return err
		case "version":
			v, err := s.text()
			w.Version = v
			return err
		case "access":
			v, err := s.text()
			w.Access = v
			return err
		case "stdout":
			v, err := s.base64()
			w.Stdout = &v
			return err
		case "stdout_truncated":
			v, err := s.boolean()
			w.StdoutTruncated = v
			return err
		case "stages":
			w.Stages = []stageWire{}
			return s.array(func() error {
				var st stageWire
				if !s.isNull() {
					if err := s.stage(&st); err != nil {
						return err
					}
				}
				w.Stages = append(w.Stages, st)
				return nil
			})
		}
		return s.skip()
	})
	if err != nil {
		return err
	}
	s.ws()
	if s.i != len(s.b) {
		return s.errorf("unexpected data after the JSON object")
	}
	return nil
}

func (s *respScanner) stage(st *stageWire) error {
	return s.object(func(key string) error {
		if s.isNull() {
			return nil
		}
		switch key {
		case "exit_code":
			v, err := s.integer()
			st.ExitCode = &v
			return err
		case "stderr":
			v, err := s.base64()
			st.Stderr = &v
			return err
		case "stderr_truncated":
			v, err := s.boolean()
			st.StderrTruncated = v
			return err
		}
		return s.skip()
	})
}
