package slurm

import (
	"reflect"
	"testing"
	"testing/fstest"
)

func TestParseSlurmdArgs(t *testing.T) {
	tests := map[string]struct {
		argv []string
		want SlurmdArgs
	}{
		"separate":            {[]string{"-D", "-f", "/etc/x.conf", "-N", "n1"}, SlurmdArgs{ConfFile: "/etc/x.conf", NodeName: "n1"}},
		"attached":            {[]string{"-f/etc/x.conf", "-Nn1"}, SlurmdArgs{ConfFile: "/etc/x.conf", NodeName: "n1"}},
		"grouped":             {[]string{"-Dvvf", "/etc/x.conf"}, SlurmdArgs{ConfFile: "/etc/x.conf"}},
		"conf server":         {[]string{"-Z", "--conf-server", "ctl:6817", "--conf", "Gres=gpu:8"}, SlurmdArgs{ConfServer: "ctl:6817"}},
		"conf server =":       {[]string{"--conf-server=ctl", "-N", "n2"}, SlurmdArgs{ConfServer: "ctl", NodeName: "n2"}},
		"value not an option": {[]string{"--conf", "-f x", "-d", "/usr/sbin/slurmstepd"}, SlurmdArgs{}},
		"end of options":      {[]string{"--", "-f", "x"}, SlurmdArgs{}},
		"missing value":       {[]string{"-f"}, SlurmdArgs{}},
		"none":                {nil, SlurmdArgs{}},
	}
	for name, tt := range tests {
		if got := ParseSlurmdArgs(tt.argv); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", name, got, tt.want)
		}
	}
}

func TestParseStat(t *testing.T) {
	comm, ppid, err := ParseStat([]byte("4242 (sh (odd) name) S 17 4242 4242 0 -1 4194560"))
	if err != nil || comm != "sh (odd) name" || ppid != 17 {
		t.Errorf("got %q %d %v", comm, ppid, err)
	}
	for _, bad := range []string{"", "12 sh S 1", "12 (sh)", "12 (sh) S x"} {
		if _, _, err := ParseStat([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestFindSlurmd(t *testing.T) {
	proc := fstest.MapFS{
		"100/stat":   {Data: []byte("100 (hwprobe) R 90 1 1 0")},
		"90/stat":    {Data: []byte("90 (sh) S 80 1 1 0")},
		"80/stat":    {Data: []byte("80 (slurmd) S 1 1 1 0")},
		"80/cmdline": {Data: []byte("/usr/sbin/slurmd\x00-D\x00-f\x00/srv/slurm.conf\x00-N\x00n1\x00")},
		"80/environ": {Data: []byte("PATH=/bin\x00SLURM_CONF=/env.conf\x00")},
		"200/stat":   {Data: []byte("200 (hwprobe) R 1 1 1 0")},
		"300/stat":   {Data: []byte("300 (hwprobe) R 301 1 1 0")},
	}
	d, err := FindSlurmd(proc, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := &Slurmd{PID: 80, Exe: "/usr/sbin/slurmd", Args: SlurmdArgs{ConfFile: "/srv/slurm.conf", NodeName: "n1"}, Conf: "/env.conf"}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("got %+v, want %+v", d, want)
	}
	if d, err := FindSlurmd(proc, 200); d != nil || err != nil {
		t.Errorf("no slurmd: got %+v, %v", d, err)
	}
	if _, err := FindSlurmd(proc, 300); err == nil {
		t.Error("a missing parent: no error")
	}
}

func TestResolveConfig(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	none := env(nil)
	exists := func(files ...string) func(string) bool {
		return func(f string) bool {
			for _, x := range files {
				if x == f {
					return true
				}
			}
			return false
		}
	}
	slurmd := func(a SlurmdArgs, conf string) *Slurmd { return &Slurmd{PID: 7, Args: a, Conf: conf} }
	tests := []struct {
		name   string
		flag   string
		getenv func(string) string
		d      *Slurmd
		exists func(string) bool
		want   Config
	}{
		{"flag first", "/f.conf", env(map[string]string{"SLURM_CONF": "/e.conf"}), slurmd(SlurmdArgs{ConfFile: "/d.conf"}, ""), exists(), Config{File: "/f.conf", Source: "--slurm-conf"}},
		{"own environment", "", env(map[string]string{"SLURM_CONF": "/e.conf"}), slurmd(SlurmdArgs{ConfFile: "/d.conf"}, ""), exists(), Config{File: "/e.conf", Source: "SLURM_CONF"}},
		{"slurmd -f", "", none, slurmd(SlurmdArgs{ConfFile: "/d.conf"}, "/de.conf"), exists(DefaultConfFile), Config{File: "/d.conf", Source: "slurmd (pid 7) -f"}},
		{"slurmd environment", "", none, slurmd(SlurmdArgs{}, "/de.conf"), exists(DefaultConfFile), Config{File: "/de.conf", Source: "slurmd (pid 7) SLURM_CONF"}},
		{"configless, cached under /run", "", none, slurmd(SlurmdArgs{ConfServer: "ctl"}, ""), exists(RunConfFile, DefaultSpoolConfFile), Config{File: RunConfFile, Source: "slurmd (pid 7): configless, its cached copy"}},
		{"configless, cached in the spool", "", none, slurmd(SlurmdArgs{ConfServer: "ctl"}, ""), exists(DefaultSpoolConfFile), Config{File: DefaultSpoolConfFile, Source: "slurmd (pid 7): configless, its cached copy"}},
		{"configless, not cached", "", none, slurmd(SlurmdArgs{ConfServer: "ctl:6817"}, ""), exists(), Config{Server: "ctl:6817", Source: "slurmd (pid 7) --conf-server"}},
		{"default", "", none, slurmd(SlurmdArgs{}, ""), exists(DefaultConfFile, RunConfFile), Config{File: DefaultConfFile, Source: "default"}},
		{"no slurmd, configless cache", "", none, nil, exists(RunConfFile), Config{File: RunConfFile, Source: "default"}},
		{"nothing", "", none, nil, exists(), Config{Source: "scontrol's own search (SLURM_CONF_SERVER, DNS SRV)"}},
	}
	for _, tt := range tests {
		if got := ResolveConfig(tt.flag, tt.getenv, tt.d, tt.exists); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestScontrolCandidates(t *testing.T) {
	got := ScontrolCandidates(&Slurmd{Exe: "/opt/slurm-22/sbin/slurmd"})
	want := []string{"/opt/slurm-22/sbin/scontrol", "/opt/slurm-22/bin/scontrol", "/usr/bin/scontrol", "/usr/local/bin/scontrol", "/opt/slurm/bin/scontrol"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v", got)
	}
	if got := ScontrolCandidates(nil); len(got) != 3 {
		t.Errorf("without slurmd: %v", got)
	}
}
