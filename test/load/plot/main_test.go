package main

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadPoints(t *testing.T) {
	pts, err := readPoints(strings.NewReader("clients,stages,output_bytes,throughput_per_s\n" +
		"64,1,0,380.5\n8,1,0,420\n8,8,0,100\n8,1,1024,99\n1,1,0,210\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []point{{1, 210}, {8, 420}, {64, 380.5}}
	if len(pts) != len(want) {
		t.Fatalf("points %v, want %v", pts, want)
	}
	for i := range want {
		if pts[i] != want[i] {
			t.Errorf("points %v, want %v", pts, want)
		}
	}
	for _, bad := range []string{"", "clients,stages\n1,1\n", "clients,stages,output_bytes,throughput_per_s\n0,1,0,5\n",
		"clients,stages,output_bytes,throughput_per_s\n8,2,0,5\n"} {
		if _, err := readPoints(strings.NewReader(bad)); err == nil {
			t.Errorf("readPoints(%q) succeeded", bad)
		}
	}
}

func TestRunDrawsPNG(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.csv"), filepath.Join(dir, "out.png")
	if err := os.WriteFile(in, []byte("clients,stages,output_bytes,throughput_per_s\n1,1,0,0.5\n200,1,0,1234\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(in, out); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != width || b.Dy() != height {
		t.Errorf("image is %v, want %dx%d", b, width, height)
	}
}
