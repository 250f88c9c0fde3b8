package probe

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Network is the RDMA inventory: EFA and InfiniBand devices from sysfs.
type Network struct {
	EFACount        int          `json:"efa_count"`
	EFAActivePorts  int          `json:"efa_active_ports"`
	InfiniBandCount int          `json:"infiniband_count"`
	Devices         []RDMADevice `json:"devices"`
}

// RDMADevice is one /sys/class/infiniband device.
type RDMADevice struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"` // "efa", "infiniband" or "rdma" (RoCE and others)
	Driver   string `json:"driver,omitempty"`
	Firmware string `json:"firmware,omitempty"`
	Ports    []Port `json:"ports"`
}

// Port is one port of an RDMA device.
type Port struct {
	Number    int     `json:"number"`
	State     string  `json:"state"` // ACTIVE, DOWN, INIT...
	PhysState string  `json:"phys_state,omitempty"`
	RateGbps  float64 `json:"rate_gbps,omitempty"`
	LinkLayer string  `json:"link_layer,omitempty"`
}

const ibClass = "sys/class/infiniband"

func collectNetwork(fsys fs.FS) (Network, error) {
	n := Network{Devices: []RDMADevice{}}
	entries, err := fs.ReadDir(fsys, ibClass)
	if errors.Is(err, fs.ErrNotExist) {
		return n, nil // no RDMA devices
	}
	if err != nil {
		return n, fmt.Errorf("rdma devices: %w", err)
	}
	var errs []error
	for _, e := range entries {
		d, err := readRDMADevice(fsys, e.Name())
		if err != nil {
			errs = append(errs, err)
		}
		n.Devices = append(n.Devices, d)
		switch d.Kind {
		case "efa":
			n.EFACount++
			for _, p := range d.Ports {
				if p.State == "ACTIVE" {
					n.EFAActivePorts++
				}
			}
		case "infiniband":
			n.InfiniBandCount++
		}
	}
	return n, errors.Join(errs...)
}

func readRDMADevice(fsys fs.FS, name string) (RDMADevice, error) {
	dir := path.Join(ibClass, name)
	d := RDMADevice{Name: name, Kind: "rdma", Ports: []Port{}}
	if ue, err := fs.ReadFile(fsys, dir+"/device/uevent"); err == nil {
		d.Driver = ParseUevent(ue)["DRIVER"]
	}
	if fw, err := fs.ReadFile(fsys, dir+"/fw_ver"); err == nil {
		d.Firmware = string(bytes.TrimSpace(fw))
	}
	ports, err := fs.ReadDir(fsys, dir+"/ports")
	if err != nil {
		return d, fmt.Errorf("rdma %s ports: %w", name, err)
	}
	var errs []error
	for _, pe := range ports {
		num, err := strconv.Atoi(pe.Name())
		if err != nil {
			continue
		}
		p, err := readPort(fsys, path.Join(dir, "ports", pe.Name()), num)
		if err != nil {
			errs = append(errs, fmt.Errorf("rdma %s port %d: %w", name, num, err))
		}
		d.Ports = append(d.Ports, p)
	}
	slices.SortFunc(d.Ports, func(a, b Port) int { return a.Number - b.Number })
	switch {
	case d.Driver == "efa" || strings.HasPrefix(name, "efa"):
		d.Kind = "efa"
	case len(d.Ports) > 0 && d.Ports[0].LinkLayer == "InfiniBand":
		d.Kind = "infiniband"
	}
	return d, errors.Join(errs...)
}

func readPort(fsys fs.FS, dir string, num int) (Port, error) {
	p := Port{Number: num}
	st, err := fs.ReadFile(fsys, dir+"/state")
	if err != nil {
		return p, err
	}
	if _, p.State, err = ParsePortState(string(st)); err != nil {
		return p, err
	}
	if ps, err := fs.ReadFile(fsys, dir+"/phys_state"); err == nil {
		_, p.PhysState, _ = ParsePortState(string(ps))
	}
	if r, err := fs.ReadFile(fsys, dir+"/rate"); err == nil {
		p.RateGbps, _ = ParseRate(string(r))
	}
	if ll, err := fs.ReadFile(fsys, dir+"/link_layer"); err == nil {
		p.LinkLayer = string(bytes.TrimSpace(ll))
	}
	return p, nil
}

// ParsePortState reads a sysfs port state such as "4: ACTIVE".
func ParsePortState(s string) (int, string, error) {
	num, name, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return 0, "", fmt.Errorf("port state %q: no colon", s)
	}
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil {
		return 0, "", fmt.Errorf("port state %q: %w", s, err)
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return 0, "", fmt.Errorf("port state %q: no name", s)
	}
	return n, name, nil
}

// ParseRate reads a sysfs port rate such as "100 Gb/sec (4X EDR)".
func ParseRate(s string) (float64, error) {
	f := strings.Fields(s)
	if len(f) < 2 || !strings.HasPrefix(f[1], "Gb/s") {
		return 0, fmt.Errorf("port rate %q: want \"N Gb/sec\"", s)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || !(v >= 0 && v <= 1e6) {
		return 0, fmt.Errorf("port rate %q: bad number", s)
	}
	return v, nil
}

// ParseUevent reads KEY=value lines.
func ParseUevent(data []byte) map[string]string {
	out := map[string]string{}
	for line := range strings.Lines(string(data)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && k != "" {
			out[k] = v
		}
	}
	return out
}
