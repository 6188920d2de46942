// Command plot draws the throughput curve of docs/performance.md from the
// CSV that test/load writes: answered requests per second against
// concurrent clients (a log scale), one point per run with no output and a
// one-stage pipeline, labelled with its value. It uses only the standard
// library, with a bitmap font of its own (font.go), so the picture is the
// same wherever it is drawn. `make load` runs it.
package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
)

func main() {
	in := flag.String("in", "", "the CSV test/load wrote (`FILE`)")
	out := flag.String("out", "", "the PNG to write (`FILE`)")
	flag.Parse()
	if *in == "" || *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: plot -in FILE.csv -out FILE.png")
		os.Exit(2)
	}
	if err := run(*in, *out); err != nil {
		fmt.Fprintf(os.Stderr, "plot: %v\n", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	pts, err := readPoints(f)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	img := draw(pts)
	w, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := png.Encode(w, img); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// point is one run: clients and answered requests per second.
type point struct{ clients, rate float64 }

// readPoints reads the runs with no output and one stage, by clients.
func readPoints(r io.Reader) ([]point, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) < 2 {
		return nil, errors.New("no runs")
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, name := range []string{"clients", "throughput_per_s", "stages", "output_bytes"} {
		if _, ok := col[name]; !ok {
			return nil, fmt.Errorf("no column %q", name)
		}
	}
	var pts []point
	for n, row := range rows[1:] {
		if row[col["stages"]] != "1" || row[col["output_bytes"]] != "0" {
			continue
		}
		c, err1 := strconv.ParseFloat(row[col["clients"]], 64)
		t, err2 := strconv.ParseFloat(row[col["throughput_per_s"]], 64)
		if err := errors.Join(err1, err2); err != nil || c < 1 || t < 0 {
			return nil, fmt.Errorf("row %d: clients %q, throughput %q", n+2, row[col["clients"]], row[col["throughput_per_s"]])
		}
		pts = append(pts, point{c, t})
	}
	if len(pts) == 0 {
		return nil, errors.New("no run with one stage and no output")
	}
	slices.SortFunc(pts, func(a, b point) int { return int(a.clients - b.clients) })
	return pts, nil
}

// The picture's size and the plot area's margins, in pixels; the font is
// drawn at scale times its size.
const (
	width, height            = 800, 480
	left, right, top, bottom = 100, 40, 60, 80
	scale                    = 2
)

var (
	white = color.RGBA{255, 255, 255, 255}
	black = color.RGBA{0, 0, 0, 255}
	grey  = color.RGBA{220, 220, 220, 255}
	blue  = color.RGBA{31, 90, 180, 255}
)

func draw(pts []point) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	fill(img, img.Bounds(), white)
	x0, x1, y0, y1 := left, width-right, height-bottom, top // plot area; y grows down

	// x: log scale from the fewest clients to the most (one decade at least).
	lo, hi := math.Log(pts[0].clients), math.Log(pts[len(pts)-1].clients)
	if hi-lo < math.Log(10) {
		hi = lo + math.Log(10)
	}
	xOf := func(c float64) int { return x0 + int(math.Round((math.Log(c)-lo)/(hi-lo)*float64(x1-x0))) }
	// y: linear from 0 to a round number well above the highest rate.
	top := 0.0
	for _, p := range pts {
		top = max(top, p.rate)
	}
	// Headroom above the highest point for its label.
	step := niceStep(top * 1.15 / 5)
	ymax := math.Ceil(top*1.15/step) * step
	if ymax == 0 {
		ymax, step = 1, 0.2
	}
	yOf := func(r float64) int { return y0 - int(math.Round(r/ymax*float64(y0-y1))) }

	for i := 0; float64(i)*step <= ymax+step/2; i++ {
		v := float64(i) * step
		y := yOf(v)
		hline(img, x0, x1, y, grey)
		label := strconv.FormatFloat(v, 'g', 6, 64)
		text(img, x0-10-textWidth(label), y-7*scale/2, label, black)
	}
	for _, p := range pts {
		x := xOf(p.clients)
		vline(img, x, y1, y0, grey)
		label := strconv.FormatFloat(p.clients, 'f', -1, 64)
		text(img, x-textWidth(label)/2, y0+10, label, black)
	}
	hline(img, x0, x1, y0, black)
	vline(img, x0, y1, y0, black)

	for i, p := range pts {
		x, y := xOf(p.clients), yOf(p.rate)
		if i > 0 {
			line(img, xOf(pts[i-1].clients), yOf(pts[i-1].rate), x, y, blue)
		}
		fill(img, image.Rect(x-4, y-4, x+5, y+5), blue)
		label := strconv.FormatFloat(p.rate, 'f', 0, 64)
		text(img, x-textWidth(label)/2, y-14-7*scale, label, blue)
	}

	title := "requests answered per second (allowed true, direct mode)"
	text(img, (width-textWidth(title))/2, 20, title, black)
	xlabel := "concurrent clients (log scale)"
	text(img, (x0+x1-textWidth(xlabel))/2, height-bottom/2+4, xlabel, black)
	return img
}

// niceStep is the smallest of 1, 2 or 5 times a power of ten that is at
// least v.
func niceStep(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}

func hline(img *image.RGBA, x0, x1, y int, c color.RGBA) { fill(img, image.Rect(x0, y, x1+1, y+1), c) }

func vline(img *image.RGBA, x, y0, y1 int, c color.RGBA) { fill(img, image.Rect(x, y0, x+1, y1+1), c) }

// line draws a line two pixels thick from (x0, y0) to (x1, y1).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	n := max(abs(x1-x0), abs(y1-y0), 1)
	for i := 0; i <= n; i++ {
		x := x0 + (x1-x0)*i/n
		y := y0 + (y1-y0)*i/n
		fill(img, image.Rect(x, y, x+2, y+2), c)
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// textWidth is the width of s in pixels as text draws it.
func textWidth(s string) int { return len([]rune(s)) * 6 * scale }

// text draws s with its top-left corner at (x, y).
func text(img *image.RGBA, x, y int, s string, c color.RGBA) {
	for _, r := range s {
		g := glyphs[r]
		for row, bits := range g {
			for col, b := range bits {
				if b == '#' {
					fill(img, image.Rect(x+col*scale, y+row*scale, x+(col+1)*scale, y+(row+1)*scale), c)
				}
			}
		}
		x += 6 * scale
	}
}
