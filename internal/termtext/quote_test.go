package termtext

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestQuote(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string
		escaped bool
	}{
		{"empty", "", `''`, false},
		{"plain word", "ls", `ls`, false},
		{"path", "/usr/bin/apt-get", `/usr/bin/apt-get`, false},
		{"option with value", "--target=/tmp/x,y:z+1@host%2", `--target=/tmp/x,y:z+1@host%2`, false},
		{"leading equals (zsh)", "=ls", `'=ls'`, false},
		{"space", "a b", `'a b'`, false},
		{"apostrophe", "it's", `'it'\''s'`, false},
		{"only an apostrophe", "'", `''\'''`, false},
		{"dollar", "$HOME", `'$HOME'`, false},
		{"command substitution", "$(reboot)`id`", "'$(reboot)`id`'", false},
		{"glob", "*.txt", `'*.txt'`, false},
		{"glob chars", "a?[bc]{d,e}", `'a?[bc]{d,e}'`, false},
		{"tilde", "~root", `'~root'`, false},
		{"history", "!!", `'!!'`, false},
		{"operators", "a;b&&c|d>e<f", `'a;b&&c|d>e<f'`, false},
		{"comment", "#x", `'#x'`, false},
		{"double quote", `say "hi"`, `'say "hi"'`, false},
		{"backslash stays single", `a\.b`, `'a\.b'`, false},
		{"literal \\x1b text", `\x1b[2J`, `'\x1b[2J'`, false},
		{"non-ASCII letters", "naïve", `'naïve'`, false},
		{"East Asian Ambiguous letter", "café", `$'caf\u00e9'`, true},
		{"Cyrillic look-alike (Ambiguous)", "/usr/bin/p\u0430sswd", `$'/usr/bin/p\u0430sswd'`, true},
		{"three-em dash", "a\u2e3bb", `$'a\u2e3bb'`, true},
		{"Yijing hexagram", "\u4dc0", `$'\u4dc0'`, true},
		{"emoji", "😀", `$'\U0001f600'`, true},
		{"text-presentation emoji", "\u263a", `$'\u263a'`, true},
		{"spacing mark", "कि", `$'क\u093f'`, true},
		{"two marks", "e\u0323\u0302", "$'e\u0323\\u0302'", true},
		{"CJK", "日本語", `'日本語'`, false},
		{"combining mark on a letter", "e\u0301", "'e\u0301'", false},
		{"fullwidth", "ｒｍ", "'ｒｍ'", false},
		{"option with a Cyrillic look-alike that is not East Asian Ambiguous", "--\u0501ry-run", `$'--\u0501ry-run'`, true},
		{"option with a fullwidth letter", "--ｆorce", `$'--\uff46orce'`, true},
		{"option with an accented letter", "--naïve", `$'--na\u00efve'`, true},
		{"en dash taken for an option", "\u2013rf", `$'\u2013rf'`, true},
		{"minus sign taken for an option", "\u2212rf", `$'\u2212rf'`, true},
		{"option, ASCII", "-rf", `-rf`, false},
		{"non-ASCII after a non-option", "x-ｒｍ", "'x-ｒｍ'", false},
		{"newline", "line1\nline2", `$'line1\nline2'`, true},
		{"tab", "a\tb", `$'a\tb'`, true},
		{"ESC", "\x1b[2J", `$'\x1b[2J'`, true},
		{"OSC title", "\x1b]0;title\x07", `$'\x1b]0;title\x07'`, true},
		{"ESC and apostrophe", "it's\x1b", `$'it\'s\x1b'`, true},
		{"ESC and backslash", "a\\b\x1b", `$'a\\b\x1b'`, true},
		{"ESC and literal \\x1b", "\\x1b\x1b", `$'\\x1b\x1b'`, true},
		{"invalid byte", "\xff", `$'\xff'`, true},
		{"invalid bytes in text", "a\xc0\xafb", `$'a\xc0\xafb'`, true},
		{"RLO", "\u202e", `$'\u202e'`, true},
		{"RLO filename", "rm -rf / #\u202etxt.exe", `$'rm -rf / #\u202etxt.exe'`, true},
		{"tag character", "\U000e0041", `$'\U000e0041'`, true},
		{"no-break space", "a\u00a0b", `$'a\u00a0b'`, true},
		{"lone mark", "\u0301", `$'\u0301'`, true},
		{"mark on apostrophe", "'\u0301", `$'\'\u0301'`, true},
		{"dollar in ANSI-C form", "$x\n", `$'$x\n'`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, escaped := Quote(tt.in)
			if got != tt.want || escaped != tt.escaped {
				t.Errorf("Quote(%q)\n got  %s, %v\n want %s, %v", tt.in, got, escaped, tt.want, tt.escaped)
			}
			checkQuote(t, tt.in, got, escaped)
		})
	}
}

// checkQuote checks the properties every result of Quote must have.
func checkQuote(t *testing.T, in, got string, escaped bool) {
	t.Helper()
	if err := checkSafe(got); err != nil {
		t.Errorf("Quote(%q) = %q: %v", in, got, err)
	}
	back, err := shellUnquote(got)
	if err != nil {
		t.Errorf("Quote(%q) = %q, which does not read back: %v", in, got, err)
	} else if back != in {
		t.Errorf("Quote(%q) = %q, which reads back as %q", in, got, back)
	}
	flag := EscapeStrict
	if LooksLikeOption(in) {
		flag = EscapeASCII
	}
	if _, e := flag(in); e != escaped {
		t.Errorf("Quote(%q) = %q, %v; the flag of its escaping (EscapeStrict, EscapeASCII for an option) is %v", in, got, escaped, e)
	}
	if joined := strings.Join(Wrap(got, 5), ""); joined != got {
		t.Errorf("Wrap(%q, 5) joins to %q", got, joined)
	}
}

func TestCommandLine(t *testing.T) {
	tests := []struct {
		name     string
		pipeline [][]string
		want     string
		escaped  bool
	}{
		{"nil", nil, "", false},
		{"empty", [][]string{}, "", false},
		{"one stage", [][]string{{"ls", "-l", "/tmp"}}, `ls -l /tmp`, false},
		{"pipeline", [][]string{{"cat", "/etc/passwd"}, {"grep", "root"}, {"wc", "-l"}}, `cat /etc/passwd | grep root | wc -l`, false},
		{"quoted pipe in an argument", [][]string{{"echo", "a | b"}}, `echo 'a | b'`, false},
		{"hostile", [][]string{{"echo", "\x1b[2J"}, {"cat"}}, `echo $'\x1b[2J' | cat`, true},
		{"escaped in a later stage", [][]string{{"true"}, {"printf", "%s", "\u202e"}}, `true | printf %s $'\u202e'`, true},
		{"assignment as program", [][]string{{"X=1", "sh"}}, `'X=1' sh`, false},
		{"assignment as argument", [][]string{{"env", "X=1", "sh"}}, `env X=1 sh`, false},
		{"job spec as program", [][]string{{"%1"}}, `'%1'`, false},
		{"reserved word as program", [][]string{{"if", "true"}}, `'if' true`, false},
		{"reserved word as argument", [][]string{{"echo", "if"}}, `echo if`, false},
		{"time", [][]string{{"time", "ls"}}, `'time' ls`, false},
		{"empty program", [][]string{{"", "x"}}, `'' x`, false},
		{"program needing quotes", [][]string{{"/opt/my app/run", "x"}}, `'/opt/my app/run' x`, false},
		{"program with ESC", [][]string{{"a\x1b"}}, `$'a\x1b'`, true},
		{"empty stage", [][]string{{"a"}, {}, {"b"}}, `a |  | b`, false},
		{"only an empty stage", [][]string{{}}, ``, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, escaped := CommandLine(tt.pipeline)
			if got != tt.want || escaped != tt.escaped {
				t.Errorf("CommandLine(%q)\n got  %s, %v\n want %s, %v", tt.pipeline, got, escaped, tt.want, tt.escaped)
			}
			if err := checkSafe(got); err != nil {
				t.Errorf("CommandLine(%q) = %q: %v", tt.pipeline, got, err)
			}
		})
	}
}

// hostileArgs returns arguments that exercise every escaping rule, for
// checking that bash reads Quote's output back as the original bytes.
func hostileArgs() []string {
	args := []string{
		"", "plain", "a b", "it's", "'", "''", `\`, `\'`, `a\.b`, `\x1b`, `\\x1b`, `\u202e`,
		"$HOME", "$(id)", "`id`", "*", "?", "[a]", "{a,b}", "~", "~root", "!!", "!x", "#c",
		"a;b", "a&b", "a|b", "a>b", "a<b", `"`, "=ls", "%1", "-n", "--", "-e",
		"\x1b[2J", "\x1b]0;title\x07", "\x1b]8;;http://x/\x1b\\a\x1b]8;;\x1b\\", "\x1bP+q\x1b\\",
		"safe\rrm -rf /", "a\nb", "a\tb", "\b\b", "\x7f", "it's\x1b", "\\\x1b", "'\x1b'",
		"\xff\xfe", "\xc0\xaf", "\xed\xa0\x80", "\xe2\x80", "\xf4\x90\x80\x80",
		"rm -rf / #\u202etxt.exe", "\u2066\u2067\u2068\u2069", "\u200b\u200c\u200d", "\ufeff",
		"\u00ad", "\U000e0041\U000e007f", "\u2028\u2029", "\u00a0\u3000", "\ufe0f", "\U000e0100",
		"\u0301", "\u0301a", "a\u0301\u0302\u0303\u0304", "'\u0301", "\\\u0301", "\x1b\u0301",
		"\ue000", "\U0010ffff", "\ufffe", "\u0378", "\u3164", "\u2800",
		"café", "日本語", "😀", "👨\u200d👩", "\ufffd",
		"\u00e9\x1b", "\x1b1234", "\x1bffff", "\u202e0041", "\U000e00410041",
	}
	for c := 1; c < 0x20; c++ { // NUL cannot be an argument
		args = append(args, string(rune(c))+"x")
	}
	for c := 0x80; c <= 0xff; c++ {
		args = append(args, string([]byte{byte(c)})+"f", string(rune(c))+"f")
	}
	// Every escaped rune of the BMP and a sample of the others.
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if (r <= 0xffff || r%251 == 0) && utf8.ValidRune(r) {
			if _, escaped := Escape(string(r)); escaped {
				args = append(args, string(r)+"0")
			}
		}
	}
	return args
}

// bashPrintf runs bash in a UTF-8 locale on the script `printf '%s\0' words`
// and returns what printf printed, split at NUL.
func bashPrintf(t *testing.T, words string) []string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	// The script goes on stdin: it is longer than one argument may be.
	cmd := exec.Command(bash, "--norc", "--noprofile", "-s")
	cmd.Stdin = strings.NewReader(`printf '%s\0' ` + words + "\n")
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("bash: %v: %s", err, stderr.String())
	}
	fields := strings.Split(string(out), "\x00")
	return fields[:len(fields)-1]
}

// TestQuoteBash pastes Quote's output into bash and checks that bash reads
// back the exact original bytes.
func TestQuoteBash(t *testing.T) {
	args := hostileArgs()
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i], _ = Quote(a)
	}
	got := bashPrintf(t, strings.Join(quoted, " "))
	if len(got) != len(args) {
		t.Fatalf("bash printed %d arguments, want %d", len(got), len(args))
	}
	for i := range args {
		if got[i] != args[i] {
			t.Errorf("bash read Quote(%q) = %s as %q", args[i], quoted[i], got[i])
		}
	}
}

// TestCommandLineBash pastes a whole pipeline into bash.
func TestCommandLineBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	args := hostileArgs()[:120]
	pipeline := [][]string{
		append([]string{"printf", `%s\0`}, args...),
		{"cat"},
		{"cat", "-"},
	}
	line, _ := CommandLine(pipeline)
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", line)
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash -c %q: %v", line, err)
	}
	got := strings.Split(string(out), "\x00")
	got = got[:len(got)-1]
	if len(got) != len(args) {
		t.Fatalf("bash printed %d arguments, want %d", len(got), len(args))
	}
	for i := range args {
		if got[i] != args[i] {
			t.Errorf("argument %d: bash read %q, want %q", i, got[i], args[i])
		}
	}
}

func FuzzQuote(f *testing.F) {
	for _, s := range []string{
		"", "ls", "a b", "it's", `a\.b`, `\x1b`, "\x1b[2J", "it's\x1b", "\xff", "\u202e",
		"\u0301", "'\u0301", "=x", "café",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		if len(arg) > maxFuzzLen {
			t.Skip()
		}
		// checkQuote checks that the output is valid UTF-8 with no control,
		// bidi or other unsafe rune, that it reads back as arg, and that
		// the flag is EscapeStrict's.
		got, escaped := Quote(arg)
		checkQuote(t, arg, got, escaped)
		line, lineEscaped := CommandLine([][]string{{arg, arg}, {arg}})
		if err := checkSafe(line); err != nil || lineEscaped != escaped {
			t.Fatalf("CommandLine of %q = %q, %v: %v", arg, line, lineEscaped, err)
		}
	})
}

// TestQuoteProgram: a program path shows every non-ASCII character
// escaped and flagged, whatever script it is from; ASCII paths are as
// Quote shows them.
func TestQuoteProgram(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		escaped  bool
	}{
		{"/usr/bin/rm", "/usr/bin/rm", false},
		{"/usr/bin/ｒｍ", `$'/usr/bin/\uff52\uff4d'`, true},
		{"/opt/na\u00efve/bin/x", `$'/opt/na\u00efve/bin/x'`, true},
		{"/usr/bin/\u0456d", `$'/usr/bin/\u0456d'`, true},
		{"/srv/日本/x", `$'/srv/\u65e5\u672c/x'`, true},
		{"/tmp/a b", `'/tmp/a b'`, false},
		{"/tmp/\x1b", `$'/tmp/\x1b'`, true},
	} {
		got, escaped := QuoteProgram(tt.in)
		if got != tt.want || escaped != tt.escaped {
			t.Errorf("QuoteProgram(%q) = %s, %v; want %s, %v", tt.in, got, escaped, tt.want, tt.escaped)
		}
	}
	// In a command line, the program is the first word of each stage.
	got, escaped := CommandLine([][]string{{"ｒｍ", "--\u0501ry-run", "ｆｉｌｅ"}, {"cat"}})
	if want := `$'\uff52\uff4d' $'--\u0501ry-run' 'ｆｉｌｅ' | cat`; got != want || !escaped {
		t.Errorf("CommandLine = %s, %v; want %s, true", got, escaped, want)
	}
}

// TestEscapeASCII: EscapeASCII escapes everything outside ASCII, and
// what Escape escapes.
func TestEscapeASCII(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"abc", "abc"}, {"a\\b", `a\\b`}, {"\u0433", `\u0433`}, {"\U0001f600", `\U0001f600`}, {"\xff", `\xff`}, {"e\u0301", `e\u0301`},
	} {
		if got, _ := EscapeASCII(tt.in); got != tt.want {
			t.Errorf("EscapeASCII(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
