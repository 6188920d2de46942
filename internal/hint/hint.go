// Package hint gives an error a piece of advice that is printed on a line
// of its own, as age's errorWithHint does: the error says what went wrong,
// shortly, and the hint what to do about it.
//
//	agent-sudo: --stdin -: more than 786432 bytes, the most one request carries
//	agent-sudo: hint: write the data to a file you can write and copy it into place ...
//
// Error returns the error's message alone, so that a hint never lengthens
// a log line or a message another program parses; a program prints the
// hints of an error it reports ([Of]) each on a line of its own, made safe
// for a terminal as the error is: a hint may embed text the program did
// not choose (a path, a value of the configuration).
package hint

import (
	"errors"
	"slices"
)

// Error is an error with a hint. Its message is Err's; the hint is
// reached through [Of] and [Lines].
type Error struct {
	Err  error
	Hint string
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns Err, so that errors.Is and errors.As see through the hint.
func (e *Error) Unwrap() error { return e.Err }

// Wrap returns err with hint, or nil when err is nil.
func Wrap(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &Error{Err: err, Hint: hint}
}

// New returns an error with message msg and hint.
func New(msg, hint string) error { return &Error{Err: errors.New(msg), Hint: hint} }

// Of returns the hints of err and of every error it wraps, outermost first,
// each once.
func Of(err error) []string {
	var hints []string
	var walk func(error)
	walk = func(err error) {
		for err != nil {
			if h, ok := err.(*Error); ok && h.Hint != "" && !slices.Contains(hints, h.Hint) {
				hints = append(hints, h.Hint)
			}
			switch u := err.(type) {
			case interface{ Unwrap() []error }:
				for _, e := range u.Unwrap() {
					walk(e)
				}
				return
			case interface{ Unwrap() error }:
				err = u.Unwrap()
			default:
				return
			}
		}
	}
	walk(err)
	return hints
}
