package boundedline

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestRead: lines up to limit bytes (newline included) come whole, across
// several buffers; a longer one comes as nil with its length and does not
// disturb the next; a last line without a newline comes with io.EOF, and
// then io.EOF alone.
func TestRead(t *testing.T) {
	const limit = 40
	fits := strings.Repeat("a", limit-1) + "\n"
	over := strings.Repeat("b", 3*limit) + "\n"
	// A 16-byte buffer (bufio's least) makes every long line take several reads.
	br := bufio.NewReaderSize(strings.NewReader(fits+over+"\n"+"next\n"+"last"), 16)
	for _, want := range []struct {
		line string
		n    int
		err  error
		kept bool
	}{
		{fits, limit, nil, true},
		{"", 3*limit + 1, nil, false},
		{"\n", 1, nil, true},
		{"next\n", 5, nil, true},
		{"last", 4, io.EOF, true},
		{"", 0, io.EOF, true},
	} {
		line, n, err := Read(br, limit)
		if string(line) != want.line || n != want.n || !errors.Is(err, want.err) {
			t.Errorf("Read = %q, %d, %v; want %q, %d, %v", line, n, err, want.line, want.n, want.err)
		}
		if !want.kept && line != nil {
			t.Errorf("a line of %d bytes, over %d, was kept", n, limit)
		}
	}
}
