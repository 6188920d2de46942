package termtext_test

import (
	"fmt"

	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

func ExampleEscape() {
	for _, s := range []string{
		"install curl",
		"safe\rrm -rf /",
		"\x1b]0;innocent\x07\x1b[2J",
		"rm -rf / #\u202etxt.exe",
		`C:\Temp`,
	} {
		fmt.Println(termtext.Escape(s))
	}
	// Output:
	// install curl false
	// safe\rrm -rf / true
	// \x1b]0;innocent\x07\x1b[2J true
	// rm -rf / #\u202etxt.exe true
	// C:\\Temp false
}

func ExampleCommandLine() {
	line, escaped := termtext.CommandLine([][]string{
		{"/usr/bin/grep", "-E", `^root:`, "/etc/shadow"},
		{"/usr/bin/tee", "it's \x1b[8mhidden"},
	})
	fmt.Println(line)
	fmt.Println(escaped)
	// Output:
	// /usr/bin/grep -E '^root:' /etc/shadow | /usr/bin/tee $'it\'s \x1b[8mhidden'
	// true
}

func ExampleWrap() {
	line, _ := termtext.CommandLine([][]string{{"rm", "-rf", "/tmp/build", "\u202e"}})
	for _, l := range termtext.Wrap(line, 12) {
		fmt.Printf("[%s]\n", l)
	}
	// Output:
	// [rm -rf ]
	// [/tmp/build ]
	// [$'\u202e']
}
