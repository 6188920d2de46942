package proto

import (
	"fmt"
	"time"
)

// parseRFC3339 parses exactly the date-time of RFC 3339, section 5.6, in
// the form every encoder writes it: "YYYY-MM-DDTHH:MM:SS", an optional
// fraction of 1 to 9 digits after a '.', then "Z" or "+HH:MM" / "-HH:MM",
// with upper-case T and Z, month 01-12, a day that exists in that month,
// hour 00-23, minute 00-59, second 00-59 (a leap second is refused), and an
// offset of at most 23:59. time.Parse accepts more: an offset hour of 24, a
// one-digit hour, a ',' before the fraction. A time this accepts is one the
// audit log can write back (FuzzDecodeThenAudit in internal/audit checks
// it). The error says what was wrong and at which byte.
func parseRFC3339(s string) (time.Time, error) {
	p := rfc3339Parser{s: s}
	year := p.digits(4, "the year", 0, 9999)
	p.lit('-', "after the year")
	month := p.digits(2, "the month", 1, 12)
	p.lit('-', "after the month")
	day := p.digits(2, "the day", 1, 31)
	p.lit('T', "between the date and the time (an upper-case T)")
	hour := p.digits(2, "the hour", 0, 23)
	p.lit(':', "after the hour")
	minute := p.digits(2, "the minute", 0, 59)
	p.lit(':', "after the minute")
	sec := p.digits(2, "the second", 0, 59)
	nsec := 0
	if p.err == nil && p.i < len(s) && s[p.i] == '.' {
		p.i++
		start := p.i
		for p.i < len(s) && '0' <= s[p.i] && s[p.i] <= '9' {
			p.i++
		}
		switch n := p.i - start; {
		case n == 0:
			p.fail(start, "want 1 to 9 digits of a fraction of a second after the '.'")
		case n > 9:
			p.fail(start+9, "a fraction of a second has at most 9 digits (nanoseconds)")
		default:
			for _, c := range s[start:p.i] {
				nsec = nsec*10 + int(c-'0')
			}
			for range 9 - n {
				nsec *= 10
			}
		}
	}
	offset := 0
	if p.err == nil {
		switch {
		case p.i >= len(s):
			p.fail(p.i, `want the time zone: "Z" or an offset such as "+01:00"`)
		case s[p.i] == 'Z':
			p.i++
		case s[p.i] == '+' || s[p.i] == '-':
			sign := 1
			if s[p.i] == '-' {
				sign = -1
			}
			p.i++
			oh := p.digits(2, "the offset hour", 0, 23)
			p.lit(':', "in the offset")
			om := p.digits(2, "the offset minute", 0, 59)
			offset = sign * (oh*3600 + om*60)
		case s[p.i] == ',':
			p.fail(p.i, "a fraction of a second follows a '.', not a ','")
		default:
			p.fail(p.i, `want the time zone: "Z" or an offset such as "+01:00"`)
		}
	}
	if p.err == nil && p.i != len(s) {
		p.fail(p.i, "unexpected text after the time zone")
	}
	if p.err != nil {
		return time.Time{}, p.err
	}
	if day > daysIn(time.Month(month), year) {
		return time.Time{}, fmt.Errorf("at byte 8: day %02d does not exist in %04d-%02d", day, year, month)
	}
	loc := time.UTC
	if offset != 0 {
		loc = time.FixedZone("", offset)
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, loc), nil
}

type rfc3339Parser struct {
	s   string
	i   int
	err error
}

func (p *rfc3339Parser) fail(at int, format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("at byte %d: %s", at, fmt.Sprintf(format, args...))
	}
}

// digits reads exactly n ASCII digits as a number in [lo, hi].
func (p *rfc3339Parser) digits(n int, what string, lo, hi int) int {
	if p.err != nil {
		return 0
	}
	v := 0
	for k := range n {
		if p.i+k >= len(p.s) || p.s[p.i+k] < '0' || p.s[p.i+k] > '9' {
			p.fail(p.i+k, "want %d digits for %s", n, what)
			return 0
		}
		v = v*10 + int(p.s[p.i+k]-'0')
	}
	if v < lo || v > hi {
		p.fail(p.i, "%s is %0*d; it must be %0*d to %0*d", what, n, v, n, lo, n, hi)
		return 0
	}
	p.i += n
	return v
}

func (p *rfc3339Parser) lit(c byte, where string) {
	if p.err != nil {
		return
	}
	if p.i >= len(p.s) || p.s[p.i] != c {
		p.fail(p.i, "want %q %s", c, where)
		return
	}
	p.i++
}

func daysIn(m time.Month, year int) int {
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
