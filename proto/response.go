package proto

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	simdbase64 "github.com/segmentio/asm/base64"
)

// fastBase64 is the standard base64 encoding with SIMD (AVX2) where the CPU
// has it; see the package documentation.
var fastBase64 = simdbase64.StdEncoding

// WriteResponse writes r to w as one JSON line.
//
// It streams: output bytes are base64-encoded straight into a small buffer in
// front of w, so a response carrying 16 MiB of stdout costs a few KiB of
// allocation rather than the several copies that json.Marshal of a []byte
// field would make (see BenchmarkWriteResponse).
func WriteResponse(w io.Writer, r *Response) error {
	bw := bufio.NewWriterSize(w, 32<<10)
	e := encoder{w: bw}
	e.raw(`{"id":`)
	e.str(r.ID)
	e.raw(`,"status":`)
	e.str(string(r.Status))
	if r.Message != "" {
		e.raw(`,"message":`)
		e.str(r.Message)
	}
	if r.Version != "" {
		e.raw(`,"version":`)
		e.str(r.Version)
	}
	if r.Access != "" {
		e.raw(`,"access":`)
		e.str(r.Access)
	}
	if r.Stages != nil {
		e.raw(`,"stages":[`)
		for i, st := range r.Stages {
			if i > 0 {
				e.raw(",")
			}
			e.raw(`{"exit_code":`)
			e.raw(strconv.Itoa(st.ExitCode))
			e.raw(`,"stderr":`)
			e.b64(st.Stderr)
			if st.StderrTruncated {
				e.raw(`,"stderr_truncated":true`)
			}
			e.raw("}")
		}
		e.raw(`],"stdout":`)
		e.b64(r.Stdout)
		if r.StdoutTruncated {
			e.raw(`,"stdout_truncated":true`)
		}
	}
	e.raw("}\n")
	if e.err != nil {
		return fmt.Errorf("write response: %w", e.err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write response: %w", err)
	}
	return nil
}

// encoder keeps the first write error so WriteResponse reads as the shape of
// the line it writes.
type encoder struct {
	w   *bufio.Writer
	err error
	// scratch holds one encoded chunk of b64.
	scratch []byte
}

func (e *encoder) raw(s string) {
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
	}
}

func (e *encoder) str(s string) {
	if e.err != nil {
		return
	}
	b, err := json.Marshal(s)
	if err != nil {
		e.err = err
		return
	}
	_, e.err = e.w.Write(b)
}

// b64Chunk is how many raw bytes b64 encodes at a time: a multiple of 3, so
// that only the last chunk can need padding, and 32 KiB encoded.
const b64Chunk = 24 << 10

// b64 writes p as a JSON string of standard base64, a chunk at a time, with
// the SIMD encoder (see the package documentation).
func (e *encoder) b64(p []byte) {
	if e.err != nil {
		return
	}
	e.raw(`"`)
	if len(p) > 0 && e.scratch == nil {
		e.scratch = make([]byte, fastBase64.EncodedLen(min(len(p), b64Chunk)))
	}
	for len(p) > 0 && e.err == nil {
		n := min(len(p), b64Chunk)
		m := fastBase64.EncodedLen(n)
		if m > len(e.scratch) {
			e.scratch = make([]byte, m)
		}
		fastBase64.Encode(e.scratch[:m], p[:n])
		_, e.err = e.w.Write(e.scratch[:m])
		p = p[n:]
	}
	e.raw(`"`)
}

// ErrProtocol marks a response that breaks the protocol: a daemon bug or
// something that is not an agent-sudo daemon.
var ErrProtocol = errors.New("protocol violation")

// MaxResponseBytes bounds a response line a client will read: every stream at
// its cap, base64-encoded, plus room for the rest of the JSON.
const MaxResponseBytes = (MaxStages+1)*((MaxOutputBytes+2)/3*4) + MaxRequestBytes

// ReadResponse reads one response line of up to MaxResponseBytes from r and
// decodes it. A response without its trailing '\n' is a protocol violation:
// the daemon was cut off and the output may be incomplete.
func ReadResponse(r io.Reader) (*Response, error) {
	line, err := ReadResponseLine(r)
	if err != nil {
		return nil, err
	}
	return DecodeResponse(line)
}

// ReadResponseLine reads one response line, including its '\n', of up to
// MaxResponseBytes. It reads straight into one growing buffer: a response
// can be hundreds of megabytes, and copying it through a bufio.Reader would
// double the work.
func ReadResponseLine(r io.Reader) ([]byte, error) {
	buf := make([]byte, 0, 64<<10)
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= MaxResponseBytes {
				return nil, fmt.Errorf("%w: response line longer than %d bytes", ErrProtocol, MaxResponseBytes)
			}
			buf = slices.Grow(buf, min(len(buf), MaxResponseBytes-len(buf)))
		}
		start := len(buf)
		n, err := r.Read(buf[start:cap(buf)])
		buf = buf[:start+n]
		if i := bytes.IndexByte(buf[start:], '\n'); i >= 0 {
			return buf[:start+i+1], nil
		}
		if err == io.EOF {
			if len(buf) == 0 {
				return nil, fmt.Errorf("%w: the daemon closed the connection without answering", ErrProtocol)
			}
			return nil, fmt.Errorf("%w: the response ended after %d bytes without its trailing newline", ErrProtocol, len(buf))
		}
		if err != nil {
			return nil, fmt.Errorf("read response: %w", err)
		}
	}
}

// responseWire is a response as decoded, before the protocol checks; the
// pointers tell absent fields from zero values. The JSON tags document the
// names and let the fuzz test compare with encoding/json.
type responseWire struct {
	ID              *string     `json:"id"`
	Status          *Status     `json:"status"`
	Message         string      `json:"message"`
	Version         string      `json:"version"`
	Access          string      `json:"access"`
	Stages          []stageWire `json:"stages"`
	Stdout          *[]byte     `json:"stdout"`
	StdoutTruncated bool        `json:"stdout_truncated"`
}

type stageWire struct {
	ExitCode        *int    `json:"exit_code"`
	Stderr          *[]byte `json:"stderr"`
	StderrTruncated bool    `json:"stderr_truncated"`
}

// DecodeResponse decodes one response line. Unknown fields are ignored; a
// missing id or status, an unknown status, or stages without exit codes are
// protocol violations (errors wrapping ErrProtocol).
func DecodeResponse(line []byte) (*Response, error) {
	var w responseWire
	if err := decodeResponseWire(line, &w); err != nil {
		return nil, err
	}
	if w.ID == nil {
		return nil, fmt.Errorf("%w: response has no id", ErrProtocol)
	}
	if w.Status == nil {
		return nil, fmt.Errorf("%w: response has no status", ErrProtocol)
	}
	if !w.Status.Valid() {
		return nil, fmt.Errorf("%w: unknown status %q", ErrProtocol, *w.Status)
	}
	resp := &Response{
		ID: *w.ID, Status: *w.Status, Message: w.Message, Version: w.Version, Access: w.Access,
		StdoutTruncated: w.StdoutTruncated,
	}
	if w.Stdout != nil {
		if w.Stages == nil {
			return nil, fmt.Errorf("%w: response has stdout but no stages", ErrProtocol)
		}
		resp.Stdout = *w.Stdout
	}
	if w.Stages != nil {
		resp.Stages = make([]Stage, len(w.Stages))
		for i, st := range w.Stages {
			if st.ExitCode == nil {
				return nil, fmt.Errorf("%w: stage %d has no exit_code", ErrProtocol, i)
			}
			resp.Stages[i].ExitCode = *st.ExitCode
			if st.Stderr != nil {
				resp.Stages[i].Stderr = *st.Stderr
			}
			resp.Stages[i].StderrTruncated = st.StderrTruncated
		}
	}
	return resp, nil
}

// ErrorResponse builds the error response for err: the request's id when err
// carries one, otherwise "" (see docs/protocol.md), and err's text.
func ErrorResponse(err error) *Response {
	return &Response{ID: IDOf(err), Status: StatusError, Message: err.Error()}
}
