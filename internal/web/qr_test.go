package web

import (
	"image"
	"image/color"
	"strings"
	"testing"
	"unicode/utf8"

	qr "github.com/piglig/go-qr"
)

// readQR turns QRText's drawing back into rows of modules, true for dark
// (a blank cell half), failing on any other character or a ragged line.
func readQR(t *testing.T, text string) [][]bool {
	t.Helper()
	var rows [][]bool
	width := -1
	for line := range strings.Lines(text) {
		line = strings.TrimSuffix(line, "\n")
		if width < 0 {
			width = utf8.RuneCountInString(line)
		}
		if n := utf8.RuneCountInString(line); n != width {
			t.Fatalf("line %d is %d columns, the first %d:\n%s", len(rows)/2, n, width, text)
		}
		top, bottom := make([]bool, 0, width), make([]bool, 0, width)
		for _, r := range line {
			var lt, lb bool // light top, light bottom
			switch r {
			case '█':
				lt, lb = true, true
			case '▀':
				lt = true
			case '▄':
				lb = true
			case ' ':
			default:
				t.Fatalf("unexpected character %q in the drawing", r)
			}
			top, bottom = append(top, !lt), append(bottom, !lb)
		}
		rows = append(rows, top, bottom)
	}
	return rows
}

// TestQRTextDecodes proves that what the enrolment prints is a QR code of
// the link: the drawing read back module by module equals the library's
// matrix inside a light quiet zone of 4 modules, a decoder reads the link
// back from an image of it, and it fits 80 columns.
func TestQRTextDecodes(t *testing.T) {
	links := []string{
		"https://localhost:8443/enroll/" + strings.Repeat("A", 43),
		"https://laptop.tail0123a.ts.net:8443/enroll/" + randomToken(),
		"https://approver.internal.example.com:8443/enroll/" + randomToken() + "?x=" + strings.Repeat("z", 20),
	}
	for _, link := range links {
		text, err := QRText(link)
		if err != nil {
			t.Fatalf("QRText(%q): %v", link, err)
		}
		rows := readQR(t, text)
		code, err := qr.EncodeText(link, qr.Low)
		if err != nil {
			t.Fatal(err)
		}
		n := code.Size() + 2*QRQuietZone
		if w := len(rows[0]); w != n || w > QRMaxWidth {
			t.Fatalf("%q: drawing is %d columns, want %d (at most %d)", link, w, n, QRMaxWidth)
		}
		if len(rows) < n {
			t.Fatalf("%q: drawing has %d module rows, want at least %d", link, len(rows), n)
		}
		for y := range rows {
			for x := range rows[y] {
				want := code.Module(x-QRQuietZone, y-QRQuietZone)
				if rows[y][x] != want {
					t.Fatalf("%q: module (%d,%d) dark=%v, the code's %v\n%s", link, x, y, rows[y][x], want, text)
				}
			}
		}
		// An image of the drawing, 4 pixels a module, decoded.
		const px = 4
		img := image.NewGray(image.Rect(0, 0, len(rows[0])*px, len(rows)*px))
		for y := range rows {
			for x := range rows[y] {
				c := color.Gray{Y: 255}
				if rows[y][x] {
					c = color.Gray{Y: 0}
				}
				for dy := range px {
					for dx := range px {
						img.SetGray(x*px+dx, y*px+dy, c)
					}
				}
			}
		}
		got, err := qr.Decode(img)
		if err != nil {
			t.Fatalf("%q: decoding the drawing: %v\n%s", link, err, text)
		}
		if got != link {
			t.Fatalf("decoded %q, want %q", got, link)
		}
	}
}

func TestQRTextTooWide(t *testing.T) {
	if _, err := QRText("https://localhost:8443/enroll/" + strings.Repeat("x", 400)); err == nil || !strings.Contains(err.Error(), "more than 80") {
		t.Fatalf("a 430-byte link: err %v, want one saying it is wider than 80 columns", err)
	}
}

func TestColorQRKeepsTheDrawing(t *testing.T) {
	text, err := QRText("https://localhost:8443/enroll/abc")
	if err != nil {
		t.Fatal(err)
	}
	c := ColorQR(text)
	if strings.Count(c, "\n") != strings.Count(text, "\n") {
		t.Fatalf("ColorQR changed the number of lines")
	}
	plain := strings.NewReplacer("\x1b[97;40m", "", "\x1b[0m", "").Replace(c)
	if plain != text {
		t.Fatalf("ColorQR changed the drawing:\n%s\nwant\n%s", plain, text)
	}
}
