package loadgen

import (
	"os"
	"reflect"
	"testing"
	"time"
)

func TestPipeline(t *testing.T) {
	for _, tt := range []struct {
		o    Options
		want [][]string
	}{
		{Options{Stages: 1}, [][]string{{"true"}}},
		{Options{Stages: 3}, [][]string{{"true"}, {"true"}, {"true"}}},
		{Options{Stages: 2, Output: 1024}, [][]string{{"head", "-c", "1024", "/dev/zero"}, {"cat"}}},
	} {
		if got := tt.o.Pipeline(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%+v: Pipeline() = %q, want %q", tt.o, got, tt.want)
		}
	}
}

func TestRank(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 200; i++ {
		d = append(d, time.Duration(i))
	}
	for p, want := range map[int]time.Duration{50: 100, 90: 180, 99: 198, 100: 200} {
		if got := rank(d, p); got != want {
			t.Errorf("rank(1..200, %d) = %d, want %d", p, got, want)
		}
	}
	if got := rank(d[:1], 99); got != 1 {
		t.Errorf("rank of one = %d", got)
	}
	if got := rank(nil, 50); got != 0 {
		t.Errorf("rank of none = %d", got)
	}
}

func TestReadProcSelf(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	before, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	after, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if before.RSS <= 0 || before.HWM < before.RSS || before.Threads < 1 || before.FDs != after.FDs+1 {
		t.Errorf("ReadProc: %+v, then %+v after closing one descriptor", before, after)
	}
}

func TestRunRefusesBadOptions(t *testing.T) {
	for _, o := range []Options{{Clients: 0, Requests: 1, Stages: 1}, {Clients: 1, Requests: 0, Stages: 1},
		{Clients: 1, Requests: 1, Stages: 0}, {Clients: 1, Requests: 1, Stages: 1, Output: -1}} {
		if _, err := Run(t.Context(), o); err == nil {
			t.Errorf("Run(%+v) succeeded", o)
		}
	}
}
