package main

import (
	"reflect"
	"testing"
)

func TestFlagLists(t *testing.T) {
	got, err := ints("output", "0, 1KiB,16MiB,5", size)
	if want := []int{0, 1 << 10, 16 << 20, 5}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ints(output) = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"", "1,,2", "-1", "1KB", "x"} {
		if _, err := ints("clients", bad, size); err == nil {
			t.Errorf("ints(%q) succeeded", bad)
		}
	}
}
