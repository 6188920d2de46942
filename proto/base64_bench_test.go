package proto

import (
	"bytes"
	stdbase64 "encoding/base64"
	"io"
	"strings"
	"testing"

	simdbase64 "github.com/segmentio/asm/base64"
)

// BenchmarkBase64 compares, on 16 MiB, the standard library's base64 with
// github.com/segmentio/asm/base64 (AVX2 where the CPU has it), the way
// WriteResponse encodes (a stream of 24 KiB chunks into a buffer) and the
// way the client decodes (one call on the whole string). The figures and
// the decision are in docs/performance.md.
func BenchmarkBase64(b *testing.B) {
	raw := bytes.Repeat([]byte("0123456789abcdef\x00\xff"), MaxOutputBytes/18)
	enc := []byte(stdbase64.StdEncoding.EncodeToString(raw))
	const chunk = 24 << 10 // a multiple of 3: no padding inside the stream
	dst := make([]byte, stdbase64.StdEncoding.EncodedLen(chunk))
	out := make([]byte, stdbase64.StdEncoding.DecodedLen(len(enc)))
	b.Run("encode/stdlib-stream", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			w := stdbase64.NewEncoder(stdbase64.StdEncoding, io.Discard)
			_, _ = w.Write(raw)
			_ = w.Close()
		}
	})
	for _, impl := range []struct {
		name   string
		encode func(dst, src []byte)
		decode func(dst, src []byte) (int, error)
	}{
		{"stdlib", stdbase64.StdEncoding.Encode, stdbase64.StdEncoding.Strict().Decode},
		{"simd", simdbase64.StdEncoding.Encode, simdbase64.StdEncoding.Strict().Decode},
	} {
		b.Run("encode/"+impl.name+"-chunks", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				for p := raw; len(p) > 0; {
					n := min(len(p), chunk)
					impl.encode(dst, p[:n])
					p = p[n:]
				}
			}
		})
		b.Run("decode/"+impl.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				n, err := impl.decode(out, enc)
				if err != nil || n != len(raw) {
					b.Fatal(n, err)
				}
			}
		})
	}
}

// TestFastBase64MatchesStdlib: the SIMD encoder writes exactly what the
// standard library writes, and the strict SIMD decoder accepts exactly what
// the standard library's strict decoder accepts, with the same bytes, on
// valid input and on input with one character changed (an invalid
// character, padding in the middle, non-zero padding bits), at lengths
// around the SIMD blocks.
func TestFastBase64MatchesStdlib(t *testing.T) {
	std := stdbase64.StdEncoding.Strict()
	seed := uint32(1)
	next := func() byte {
		seed = seed*1664525 + 1013904223
		return byte(seed >> 24)
	}
	bad := []byte{'=', '!', '-', '_', '\x00', 0x80, ' ', 'A', '/'}
	for n := 0; n < 300; n++ {
		raw := make([]byte, n)
		for i := range raw {
			raw[i] = next()
		}
		want := make([]byte, stdbase64.StdEncoding.EncodedLen(n))
		stdbase64.StdEncoding.Encode(want, raw)
		got := make([]byte, fastBase64.EncodedLen(n))
		fastBase64.Encode(got, raw)
		if !bytes.Equal(got, want) {
			t.Fatalf("encode of %d bytes differs", n)
		}
		inputs := [][]byte{want}
		for _, c := range bad {
			if len(want) == 0 {
				break
			}
			m := bytes.Clone(want)
			m[int(next())%len(m)] = c
			inputs = append(inputs, m)
		}
		if len(want) >= 2 && want[len(want)-1] == '=' {
			// Non-zero padding bits: strict decoding refuses them.
			m := bytes.Clone(want)
			i := bytes.IndexByte(m, '=') - 1
			m[i] = "BCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/A"[strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", m[i])]
			inputs = append(inputs, m)
		}
		for _, in := range inputs {
			a := make([]byte, std.DecodedLen(len(in)))
			an, aerr := std.Decode(a, in)
			b := make([]byte, strictBase64.DecodedLen(len(in)))
			bn, berr := strictBase64.Decode(b, in)
			if (aerr == nil) != (berr == nil) || (aerr == nil && !bytes.Equal(a[:an], b[:bn])) {
				t.Fatalf("decode of %q: stdlib %d, %v; simd %d, %v", in, an, aerr, bn, berr)
			}
		}
	}
}
