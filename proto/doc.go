// Package proto is the agent-sudo wire format: the request an agent sends and
// the response the daemon answers, as fixed by docs/protocol.md.
//
// # Framing
//
// One JSON object on one line per connection, in each direction. A request
// line is at most [MaxRequestBytes] bytes including its terminating '\n'. A
// peer that closes before sending '\n' gets [ErrMissingNewline] even if what it
// sent was valid JSON, because a truncated write must never be mistaken for a
// complete request.
//
// # Strictness
//
// The decoder is stricter than encoding/json where leniency could let two
// parsers disagree about what was asked:
//
//   - the line must be valid UTF-8 (encoding/json would silently replace bad
//     bytes with U+FFFD, so the argv shown to a human could differ from the
//     bytes the agent sent);
//   - a key that appears twice in the same object is refused, because
//     parsers differ on whether the first or the last one wins;
//   - nothing but white space may follow the object on the line.
//
// Unknown fields are ignored for forward compatibility.
//
// # Base64
//
// Output travels as standard base64 inside the JSON line: up to 33 streams of
// 16 MiB each. WriteResponse encodes it, and the client decodes it, with
// github.com/segmentio/asm/base64, which uses AVX2 where the CPU has it and
// the standard library's code elsewhere and for the last bytes. On the
// project's machine it encodes 16 MiB 6x and decodes it 15x faster than
// encoding/base64 (BenchmarkBase64; figures in docs/performance.md), which
// was most of the time a 16 MiB answer took end to end. Its output and what
// its strict decoder accepts are those of encoding/base64
// (TestFastBase64MatchesStdlib).
//
// # Policy
//
// This package decodes, applies defaults and validates shape; it does no I/O
// policy. Whether a request may run is the daemon's and the approver's call.
package proto
