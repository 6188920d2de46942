// Package boundedline reads lines of bounded length from a bufio.Reader: the one
// way the audit log's reader, the approver channel and the MCP server's
// stdio read a line that its sender could make endless.
package boundedline

import "bufio"

// Read reads one line from br: its bytes up to and including the first
// '\n', or up to the error that ended it. n is the line's length. The line
// is kept only when n is at most limit; a longer one is read to its end and
// returned as nil, so that it costs at most limit bytes of memory and the
// next Read starts on the next line. err is nil when the line ended in
// '\n'; otherwise it is the read error, io.EOF for a last line without a
// newline (or, when n is 0, for the end of the input).
//
// The line may be br's own buffer, valid only until the next read from br.
func Read(br *bufio.Reader, limit int) (line []byte, n int, err error) {
	for {
		var chunk []byte
		chunk, err = br.ReadSlice('\n')
		switch {
		case n+len(chunk) > limit:
			line = nil // too long: read to its end, not kept
		case n == 0 && err != bufio.ErrBufferFull:
			line = chunk // the whole line at once: no copy
		default:
			line = append(line, chunk...)
		}
		n += len(chunk)
		if err != bufio.ErrBufferFull {
			return line, n, err
		}
	}
}
