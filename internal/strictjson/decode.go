package strictjson

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Unmarshal decodes data, exactly one JSON value, into v with the one
// strict reading every JSON message the daemon and the web approver take
// gets (docs/security.md, "One strict reading of JSON"), at every depth:
//
//   - a member's key matches a struct field's name exactly: case-sensitive,
//     with no Unicode folding ("Decision" and "deci\u017fion" are not
//     "decision"); a key that matches no field is ignored, as the
//     protocols say of unknown fields;
//   - no object, at any depth, names a member twice;
//   - the text is valid UTF-8 and has no escape that is not a character (a
//     lone UTF-16 surrogate);
//   - nothing but white space follows the value;
//   - bytes ([]byte) are standard base64 with padding, with no line break
//     or other character outside the alphabet (escaped or not) and with
//     the unused bits of the last character zero, so that each byte string
//     has exactly one spelling;
//   - times (time.Time) are RFC 3339 as the standard says: a two-digit
//     hour, a '.' before fractional seconds, an offset within ±23:59.
//
// It is github.com/go-json-experiment/json (Go's encoding/json/v2 line),
// whose defaults are all of the above but the last bits of base64, with a
// decoder for []byte that adds them.
func Unmarshal(data []byte, v any) error {
	return json.Unmarshal(data, v, options)
}

// options are Unmarshal's: the package's defaults, and strict base64.
var options = json.WithUnmarshalers(json.UnmarshalFromFunc(unmarshalBytes))

// unmarshalBytes decodes a JSON string of standard, padded base64 with no
// character outside the alphabet and zero unused bits into *b; null leaves
// *b nil.
func unmarshalBytes(dec *jsontext.Decoder, b *[]byte) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case 'n':
		*b = nil
		return nil
	case '"':
	default:
		return fmt.Errorf("want a base64 string, got %s", tok.Kind())
	}
	s := tok.String()
	if i := bytes.IndexAny([]byte(s), "\r\n"); i >= 0 {
		return fmt.Errorf("base64 with a line break at offset %d; send it on one line", i)
	}
	out, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		var ce base64.CorruptInputError
		if errors.As(err, &ce) {
			return fmt.Errorf("not standard base64 with padding and zero unused bits (at offset %d)", int64(ce))
		}
		return fmt.Errorf("not standard base64: %w", err)
	}
	if out == nil {
		out = []byte{}
	}
	*b = out
	return nil
}
