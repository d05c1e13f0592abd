package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long a component may take to exit after SIGTERM.
const stopGrace = 10 * time.Second

// process is one component, started in its own process group with its
// output in a log file. It gets SIGKILL when the driver dies.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
	mu      sync.Mutex
	waitErr error
}

// startProcess starts bin with args, logging to logDir/name.log.
func startProcess(logDir, name, bin string, args, env []string) (*process, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s: binary: %w (run integration/hack/build-tools.sh)", name, err)
	}
	logPath := filepath.Join(logDir, name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = logDir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	fmt.Fprintf(log, "# %s %s\n", bin, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("%s: start: %w", name, err)
	}
	p := &process{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		log.Close()
		close(p.done)
	}()
	return p, nil
}

// alive returns an error when the process has exited.
func (p *process) alive() error {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return fmt.Errorf("%s exited: %v (log %s)", p.name, p.waitErr, p.logPath)
	default:
		return nil
	}
}

// stop ends the process group: SIGTERM, then SIGKILL after stopGrace.
func (p *process) stop() {
	if p == nil || p.alive() != nil {
		return
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
}

// tail returns the last n lines of the log.
func (p *process) tail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// procUsage is what /proc says about a running process.
type procUsage struct {
	// CPUSeconds is user + system time.
	CPUSeconds float64
	// PeakRSSBytes is the resident set's high-water mark (VmHWM).
	PeakRSSBytes int64
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on every
// Linux architecture Go supports).
const clockTicks = 100

// usage reads the process's CPU time and peak RSS from /proc.
func (p *process) usage() (procUsage, error) {
	pid := p.cmd.Process.Pid
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procUsage{}, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// fields are counted after its closing parenthesis.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procUsage{}, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return procUsage{}, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return procUsage{}, err
	}
	u := procUsage{CPUSeconds: (ut + st) / clockTicks}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return u, fmt.Errorf("/proc/%d/status: %q: %w", pid, line, err)
			}
			u.PeakRSSBytes = kb * 1024
		}
	}
	return u, nil
}

var (
	portsMu   sync.Mutex
	usedPorts = map[int]bool{}
)

// freePort returns a loopback TCP port that was free a moment ago and was
// not handed out before in this run.
func freePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !usedPorts[port] {
			usedPorts[port] = true
			return port, nil
		}
	}
	return 0, errors.New("no free port on 127.0.0.1")
}

func hostPort(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }
