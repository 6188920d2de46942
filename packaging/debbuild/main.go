// Command debbuild builds agent-sudo's Debian package from nfpm.yaml with
// nfpm's deb packager, used as a library.
//
// It is a module of its own so that the daemon's module does not depend on
// a packager, and it links only nfpm's deb packager: nfpm's command line
// also links its rpm and msix packagers, whose modules the module proxy does
// not serve. `make deb` builds it and runs it in the repository root:
//
//	VERSION=1.2.3 GOARCH=amd64 dist/debbuild -config packaging/nfpm.yaml -out dist/x.deb
//
// nfpm.yaml takes VERSION and GOARCH from the environment; its paths are
// relative to the repository root.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the "deb" packager
)

func main() {
	config := flag.String("config", "", "nfpm configuration file")
	out := flag.String("out", "", "the .deb to write")
	flag.Parse()
	if err := build(*config, *out); err != nil {
		fmt.Fprintf(os.Stderr, "debbuild: %v\n", err)
		os.Exit(1)
	}
}

// build writes the package that config describes to out, or nothing when
// it fails.
func build(config, out string) error {
	if config == "" || out == "" {
		return fmt.Errorf("usage: debbuild -config nfpm.yaml -out FILE.deb")
	}
	data, err := os.ReadFile(config)
	if err != nil {
		return err
	}
	// nfpm expands the environment in some fields only; expand it in all,
	// the contents' paths included.
	cfg, err := nfpm.Parse(strings.NewReader(os.ExpandEnv(string(data))))
	if err != nil {
		return fmt.Errorf("%s: %w", config, err)
	}
	info, err := cfg.Get("deb")
	if err != nil {
		return fmt.Errorf("%s: %w", config, err)
	}
	info = nfpm.WithDefaults(info)
	if err := nfpm.Validate(info); err != nil {
		return fmt.Errorf("%s: %w", config, err)
	}
	pkgr, err := nfpm.Get("deb")
	if err != nil {
		return err
	}
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := pkgr.Package(info, f); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("package: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, out)
}
