package harness

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

// StopGrace is how long a component may take to exit after SIGTERM before
// its process group is killed.
const StopGrace = 10 * time.Second

// Spec describes how to start a component.
type Spec struct {
	// Name identifies the component in messages ("etcd", "vc-scheduler");
	// the log file is <logDir>/<Name>.log, with a numeric suffix for later
	// starts of the same name.
	Name string
	// Path is the binary.
	Path string
	// Args are the command-line arguments.
	Args []string
	// Env is added to a minimal environment (PATH, HOME, TMPDIR); a later
	// entry for the same name wins.
	Env []string
	// Dir is the working directory; empty means logDir.
	Dir string
}

// Process is one running component: a binary started in its own process
// group with stdout and stderr in a log file.
type Process struct {
	// Name identifies the component in messages.
	Name string
	// LogPath is the file that receives the component's output.
	LogPath string
	// Args are the command-line arguments it was started with.
	Args []string

	cmd  *exec.Cmd
	done chan struct{}
	// mu guards waitErr, written once when the process exits.
	mu      sync.Mutex
	waitErr error
}

// Start starts spec in a new process group, logging to logDir. The child
// also gets SIGKILL when the calling process dies, so a crashed or
// timed-out run leaves no component behind.
func Start(logDir string, spec Spec) (*Process, error) {
	if _, err := os.Stat(spec.Path); err != nil {
		return nil, fmt.Errorf("%s: binary: %w (integration/hack/build-tools.sh builds it)", spec.Name, err)
	}
	logPath := filepath.Join(logDir, spec.Name+".log")
	for i := 2; FileExists(logPath); i++ {
		logPath = filepath.Join(logDir, fmt.Sprintf("%s.%d.log", spec.Name, i))
	}
	log, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = spec.Dir
	if cmd.Dir == "" {
		cmd.Dir = logDir
	}
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"TMPDIR=" + os.TempDir(),
	}, spec.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	fmt.Fprintf(log, "# %s %s\n", spec.Path, strings.Join(spec.Args, " "))
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("%s: start: %w", spec.Name, err)
	}
	p := &Process{Name: spec.Name, LogPath: logPath, Args: spec.Args, cmd: cmd, done: make(chan struct{})}
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

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Alive returns an error naming the component when it has exited.
func (p *Process) Alive() error {
	if gone, err := p.Exited(); gone {
		return fmt.Errorf("%s exited: %v (log %s)", p.Name, err, p.LogPath)
	}
	return nil
}

// Stop ends the component's whole process group: SIGTERM, then SIGKILL
// after StopGrace. It is safe to call more than once, and on nil.
func (p *Process) Stop() {
	if p == nil {
		return
	}
	if gone, _ := p.Exited(); gone {
		return
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(StopGrace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
}

// Kill ends the component's whole process group at once with SIGKILL, as
// a crash or a lost node would, and waits until it has exited. It is safe
// to call more than once, and on nil.
func (p *Process) Kill() {
	if p == nil {
		return
	}
	if gone, _ := p.Exited(); gone {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Tail returns the last n lines of the component's log.
func (p *Process) Tail(n int) string {
	return TailFile(p.LogPath, n)
}

// Usage is what /proc says about a running process.
type Usage struct {
	// CPUSeconds is user + system time.
	CPUSeconds float64
	// PeakRSSBytes is the resident set's high-water mark (VmHWM).
	PeakRSSBytes int64
	// RSSBytes is the resident set now (VmRSS).
	RSSBytes int64
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on every
// Linux architecture Go supports).
const clockTicks = 100

// Usage reads the running process's CPU time and peak RSS from /proc.
func (p *Process) Usage() (Usage, error) {
	pid := p.cmd.Process.Pid
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Usage{}, err
	}
	u, err := parseStat(string(stat))
	if err != nil {
		return Usage{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	if u.PeakRSSBytes, err = parseStatusKB(string(status), "VmHWM"); err != nil {
		return u, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	if u.RSSBytes, err = parseStatusKB(string(status), "VmRSS"); err != nil {
		return u, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	return u, nil
}

// parseStat reads user + system time from the text of /proc/<pid>/stat.
func parseStat(s string) (Usage, error) {
	// The command name (field 2) is in parentheses and may hold spaces:
	// fields are counted after its closing parenthesis.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Usage{}, fmt.Errorf("no command name in %q", s)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return Usage{}, fmt.Errorf("%d fields after the command name, want at least 13", len(f))
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return Usage{}, err
	}
	return Usage{CPUSeconds: (ut + st) / clockTicks}, nil
}

// parseStatusKB reads a field given in kB (VmHWM, VmRSS) in bytes from the
// text of /proc/<pid>/status (0 when the line is missing, as for a zombie).
func parseStatusKB(status, field string) (int64, error) {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%q: %w", line, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, nil
}

// Group is the components of one control plane, started in one log
// directory and stopped together.
type Group struct {
	// LogDir receives every component's log.
	LogDir string
	procs  []*Process
}

// Start starts a component and adds it to the group.
func (g *Group) Start(spec Spec) (*Process, error) {
	p, err := Start(g.LogDir, spec)
	if err != nil {
		return nil, err
	}
	g.procs = append(g.procs, p)
	return p, nil
}

// Processes lists every component started, in start order.
func (g *Group) Processes() []*Process { return g.procs }

// Stop stops every component, newest first.
func (g *Group) Stop() {
	for i := len(g.procs) - 1; i >= 0; i-- {
		g.procs[i].Stop()
	}
}

// Alive returns an error for every component that has exited.
func (g *Group) Alive() error {
	var errs []error
	for _, p := range g.procs {
		errs = append(errs, p.Alive())
	}
	return errors.Join(errs...)
}

// LogTails returns the last lines of every component's log.
func (g *Group) LogTails(lines int) string {
	var b strings.Builder
	for _, p := range g.procs {
		fmt.Fprintf(&b, "----- %s (%s), last %d lines -----\n%s\n", p.Name, p.LogPath, lines, p.Tail(lines))
	}
	return b.String()
}

// TailFile returns the last n lines of a file, or a note why it cannot.
func TailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// FileExists reports whether path exists.
func FileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

var (
	portsMu   sync.Mutex
	usedPorts = map[int]bool{}
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago and
// that this process has not handed out before.
func FreePort() (int, error) {
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

// FreePorts returns n ports of FreePort.
func FreePorts(n int) ([]int, error) {
	out := make([]int, n)
	for i := range out {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// HostPort formats a loopback address.
func HostPort(port int) string {
	return fmt.Sprintf("127.0.0.1:%d", port)
}
