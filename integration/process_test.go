package integration

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long a component may take to exit after SIGTERM before
// its process group is killed.
const stopGrace = 10 * time.Second

// process is one running component: a binary started in its own process
// group with stdout and stderr in a log file.
type process struct {
	// name identifies the component in messages ("etcd", "vc-scheduler").
	name string
	// logPath is the file that receives the component's output.
	logPath string

	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	// mu guards waitErr, written once when the process exits.
	mu      sync.Mutex
	waitErr error
}

// processSpec describes how to start a component.
type processSpec struct {
	// Name identifies the component; the log file is <logDir>/<Name>.log
	// (with a numeric suffix for later starts of the same component).
	Name string
	// Path is the binary.
	Path string
	// Args are the command-line arguments.
	Args []string
	// Env is added to a minimal environment (PATH, HOME, TMPDIR).
	Env []string
	// Dir is the working directory; empty means logDir.
	Dir string
}

// startProcess starts spec in a new process group. The child also gets
// SIGKILL when the test binary dies, so a crashed or timed-out test run
// leaves no component behind.
func startProcess(logDir string, spec processSpec) (*process, error) {
	if _, err := os.Stat(spec.Path); err != nil {
		return nil, fmt.Errorf("%s: binary: %w", spec.Name, err)
	}
	logPath := filepath.Join(logDir, spec.Name+".log")
	for i := 2; fileExists(logPath); i++ {
		logPath = filepath.Join(logDir, fmt.Sprintf("%s.%d.log", spec.Name, i))
	}
	log, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Stdout = log
	cmd.Stderr = log
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
	p := &process{name: spec.Name, logPath: logPath, cmd: cmd, log: log, done: make(chan struct{})}
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

// exited reports whether the process has ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.waitErr
	default:
		return false, nil
	}
}

// alive returns an error naming the component when it has exited.
func (p *process) alive() error {
	if gone, err := p.exited(); gone {
		return fmt.Errorf("%s exited: %v (log %s)", p.name, err, p.logPath)
	}
	return nil
}

// stop ends the component's whole process group: SIGTERM, then SIGKILL
// after stopGrace. It is safe to call more than once.
func (p *process) stop() {
	if gone, _ := p.exited(); gone {
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

// tail returns the last n lines of the component's log.
func (p *process) tail(n int) string {
	return tailFile(p.logPath, n)
}

// tailFile returns the last n lines of a file, or a note why it cannot.
func tailFile(path string, n int) string {
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

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago. The
// ports handed out are remembered so that one run never hands out the same
// port twice.
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

var (
	portsMu   sync.Mutex
	usedPorts = map[int]bool{}
)

// hostPort formats a loopback address.
func hostPort(port int) string {
	return fmt.Sprintf("127.0.0.1:%d", port)
}
