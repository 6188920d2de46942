package web

import (
	"fmt"
	"strings"

	qr "github.com/piglig/go-qr"
)

// QRQuietZone is the light margin around a QR code, in modules: the
// standard's 4 (ISO/IEC 18004), which phone cameras need to find the code.
const QRQuietZone = 4

// QRMaxWidth is the widest QR code QRText draws, in columns: one
// 80-column terminal.
const QRMaxWidth = 80

// QRText draws s as a QR code for a terminal, two modules to a character
// cell with Unicode half blocks (▀ ▄ █ and space), in lines of at most
// QRMaxWidth columns, each ending in a newline. The ink stands for the
// light modules and the quiet zone, the blank for the dark ones: on a
// terminal that writes light text on a dark background, the usual one, it
// reads as a QR code is printed; on a light background it is inverted,
// which phone cameras read too (ColorQR forces the colours on a terminal).
// It fails when s does not fit at QRMaxWidth (a link of about 300 bytes
// at the lowest error correction; an enrolment link is about 100).
func QRText(s string) (string, error) {
	code, err := qr.EncodeText(s, qr.Low)
	if err != nil {
		return "", fmt.Errorf("qr code: %w", err)
	}
	n := code.Size() + 2*QRQuietZone
	if n > QRMaxWidth {
		return "", fmt.Errorf("qr code: %d columns wide, more than %d", n, QRMaxWidth)
	}
	// light reports whether the module at (x, y) of the drawn square,
	// quiet zone included, is light; below the square is light too, for
	// the last line's lower half when n is odd.
	light := func(x, y int) bool {
		x, y = x-QRQuietZone, y-QRQuietZone
		return !code.Module(x, y) // Module is false outside the code
	}
	var b strings.Builder
	for y := 0; y < n; y += 2 {
		for x := 0; x < n; x++ {
			top, bottom := light(x, y), y+1 >= n || light(x, y+1)
			switch {
			case top && bottom:
				b.WriteString("█")
			case top:
				b.WriteString("▀")
			case bottom:
				b.WriteString("▄")
			default:
				b.WriteByte(' ')
			}
		}
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// ColorQR wraps each line of QRText's drawing in bright white on black
// (SGR 97;40, reset at the end of the line), so that it reads as a QR code
// whatever the terminal's own colours. For a terminal only.
func ColorQR(text string) string {
	var b strings.Builder
	for line := range strings.Lines(text) {
		b.WriteString("\x1b[97;40m")
		b.WriteString(strings.TrimSuffix(line, "\n"))
		b.WriteString("\x1b[0m\n")
	}
	return b.String()
}
