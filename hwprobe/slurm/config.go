package slurm

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// Where Slurm looks when nothing says otherwise (Debian's and SchedMD's
// builds; scontrol tries them in this order after SLURM_CONF).
const (
	DefaultConfFile = "/etc/slurm/slurm.conf"
	// RunConfFile is the cached configuration a configless slurmd links
	// under /run (Slurm 22.05 and later).
	RunConfFile = "/run/slurm/conf/slurm.conf"
	// DefaultSpoolConfFile is where a configless slurmd caches it under the
	// default SlurmdSpoolDir.
	DefaultSpoolConfFile = "/var/spool/slurmd/conf-cache/slurm.conf"
)

// SlurmdArgs are the options of a slurmd command line that tell where its
// configuration is and which node it is.
type SlurmdArgs struct {
	ConfFile   string // -f FILE
	ConfServer string // --conf-server HOST[:PORT] (configless)
	NodeName   string // -N NAME
}

// slurmdArgOpts are slurmd's short options that take a value.
const slurmdArgOpts = "dfLnN"

// ParseSlurmdArgs reads slurmd's command line (argv without the program
// name), as getopt does: "-f FILE", "-fFILE", "-Df FILE", "--conf-server
// HOST", "--conf-server=HOST"; "--" ends the options.
func ParseSlurmdArgs(argv []string) SlurmdArgs {
	var a SlurmdArgs
	set := func(opt byte, val string) {
		switch opt {
		case 'f':
			a.ConfFile = val
		case 'N':
			a.NodeName = val
		}
	}
	for i := 0; i < len(argv); i++ {
		arg := argv[i]
		switch {
		case arg == "--":
			return a
		case strings.HasPrefix(arg, "--"):
			name, val, hasVal := strings.Cut(arg[2:], "=")
			// slurmd's long options that take a value.
			takes := name == "conf-server" || name == "conf" || name == "authinfo" || name == "ca-cert-file" || name == "extra" || name == "instance-id" || name == "instance-type"
			if takes && !hasVal && i+1 < len(argv) {
				i++
				val = argv[i]
			}
			if name == "conf-server" {
				a.ConfServer = val
			}
		case strings.HasPrefix(arg, "-") && len(arg) > 1:
			for j := 1; j < len(arg); j++ {
				opt := arg[j]
				if strings.IndexByte(slurmdArgOpts, opt) < 0 {
					continue
				}
				val := arg[j+1:]
				if val == "" && i+1 < len(argv) {
					i++
					val = argv[i]
				}
				set(opt, val)
				break
			}
		}
	}
	return a
}

// ParseStat reads /proc/PID/stat: the command name and the parent's pid.
// The name is in parentheses and may hold spaces and parentheses itself.
func ParseStat(b []byte) (comm string, ppid int, err error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return "", 0, errors.New("stat: no command name")
	}
	fields := strings.Fields(string(b[end+1:]))
	if len(fields) < 2 {
		return "", 0, errors.New("stat: no parent pid")
	}
	ppid, err = strconv.Atoi(fields[1])
	if err != nil || ppid < 0 {
		return "", 0, fmt.Errorf("stat: parent pid %q", fields[1])
	}
	return string(b[open+1 : end]), ppid, nil
}

// splitNUL splits /proc/PID/cmdline or environ.
func splitNUL(b []byte) []string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\x00")
}

// Slurmd is the slurmd that started this process (slurmd runs its
// HealthCheckProgram with no environment but SLURMD_NODENAME, so what it
// was told lives in its own command line and environment).
type Slurmd struct {
	PID  int
	Exe  string // its program, when readable
	Args SlurmdArgs
	Conf string // SLURM_CONF in its environment
}

// maxAncestors bounds the walk up the process tree (slurmd, a wrapper
// script, a shell it started, ...).
const maxAncestors = 8

// FindSlurmd walks up from pid's parent through proc (a /proc file system)
// and returns the first slurmd ancestor, or nil when there is none.
func FindSlurmd(proc fs.FS, pid int) (*Slurmd, error) {
	for range maxAncestors {
		b, err := fs.ReadFile(proc, strconv.Itoa(pid)+"/stat")
		if err != nil {
			return nil, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
		}
		_, ppid, err := ParseStat(b)
		if err != nil {
			return nil, fmt.Errorf("/proc/%d/%w", pid, err)
		}
		if ppid <= 1 {
			return nil, nil
		}
		pid = ppid
		b, err = fs.ReadFile(proc, strconv.Itoa(pid)+"/stat")
		if err != nil {
			return nil, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
		}
		comm, _, err := ParseStat(b)
		if err != nil {
			return nil, fmt.Errorf("/proc/%d/%w", pid, err)
		}
		if comm != "slurmd" {
			continue
		}
		d := &Slurmd{PID: pid}
		if cmd, err := fs.ReadFile(proc, strconv.Itoa(pid)+"/cmdline"); err == nil {
			if argv := splitNUL(cmd); len(argv) > 0 {
				d.Args = ParseSlurmdArgs(argv[1:])
				if strings.HasPrefix(argv[0], "/") {
					d.Exe = argv[0]
				}
			}
		}
		if env, err := fs.ReadFile(proc, strconv.Itoa(pid)+"/environ"); err == nil {
			for _, kv := range splitNUL(env) {
				if v, ok := strings.CutPrefix(kv, "SLURM_CONF="); ok {
					d.Conf = v
				}
			}
		}
		return d, nil
	}
	return nil, nil
}

// Config is how scontrol is to find the Slurm configuration.
type Config struct {
	File   string // SLURM_CONF for scontrol; "" leaves scontrol to its own search
	Server string // SLURM_CONF_SERVER for scontrol (a configless slurmd's controller)
	Source string // where it came from, for the log
}

// ResolveConfig decides which Slurm configuration scontrol reads, in this
// order: the flag; SLURM_CONF in hwprobe's environment; the slurmd that
// ran hwprobe (its -f, then SLURM_CONF in its environment, then, for a
// configless slurmd, the copy it cached: /run/slurm/conf/slurm.conf or
// the default spool's conf-cache, else its --conf-server); then scontrol's
// own search (the default /etc/slurm/slurm.conf, then /run/slurm/conf,
// then DNS SRV records). exists says whether a file exists.
func ResolveConfig(flag string, getenv func(string) string, d *Slurmd, exists func(string) bool) Config {
	switch {
	case flag != "":
		return Config{File: flag, Source: "--slurm-conf"}
	case getenv("SLURM_CONF") != "":
		return Config{File: getenv("SLURM_CONF"), Source: "SLURM_CONF"}
	}
	if d != nil {
		who := fmt.Sprintf("slurmd (pid %d)", d.PID)
		switch {
		case d.Args.ConfFile != "":
			return Config{File: d.Args.ConfFile, Source: who + " -f"}
		case d.Conf != "":
			return Config{File: d.Conf, Source: who + " SLURM_CONF"}
		case d.Args.ConfServer != "":
			for _, f := range []string{RunConfFile, DefaultSpoolConfFile} {
				if exists(f) {
					return Config{File: f, Source: who + ": configless, its cached copy"}
				}
			}
			return Config{Server: d.Args.ConfServer, Source: who + " --conf-server"}
		}
	}
	for _, f := range []string{DefaultConfFile, RunConfFile} {
		if exists(f) {
			return Config{File: f, Source: "default"}
		}
	}
	return Config{Source: "scontrol's own search (SLURM_CONF_SERVER, DNS SRV)"}
}

// ScontrolCandidates lists where scontrol may be, in order, after PATH
// (which slurmd does not pass to its HealthCheckProgram): beside the
// slurmd that ran hwprobe (its bin/ for an sbin/ slurmd), then the usual
// install prefixes.
func ScontrolCandidates(d *Slurmd) []string {
	var c []string
	if d != nil && d.Exe != "" {
		dir := path.Dir(d.Exe)
		c = append(c, path.Join(dir, "scontrol"), path.Join(path.Dir(dir), "bin", "scontrol"))
	}
	return append(c, "/usr/bin/scontrol", "/usr/local/bin/scontrol", "/opt/slurm/bin/scontrol")
}

// LeaveConfig decides which Slurm configuration `hwprobe slurm leave`
// reads, in this order: the flag; the copy a configless slurmd cached
// (RunConfFile, then DefaultSpoolConfFile); the join configuration's
// controllers, as SLURM_CONF_SERVER. controllers is called only when
// neither a flag nor a cached copy is there; an error when it fails or
// lists none.
func LeaveConfig(flag string, exists func(string) bool, controllers func() ([]string, error)) (Config, error) {
	if flag != "" {
		return Config{File: flag, Source: "--slurm-conf"}, nil
	}
	for _, f := range []string{RunConfFile, DefaultSpoolConfFile} {
		if exists(f) {
			return Config{File: f, Source: "slurmd's configless cache"}, nil
		}
	}
	c, err := controllers()
	if err != nil {
		return Config{}, fmt.Errorf("no Slurm configuration (no --slurm-conf, no configless cache at %s or %s) and %w", RunConfFile, DefaultSpoolConfFile, err)
	}
	if len(c) == 0 {
		return Config{}, fmt.Errorf("no Slurm configuration (no --slurm-conf, no configless cache at %s or %s, no controllers in the join configuration)", RunConfFile, DefaultSpoolConfFile)
	}
	return Config{Server: strings.Join(c, ","), Source: "the join configuration's controllers"}, nil
}
