package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// copyOp is one COPY of the final stage: paths of a build stage copied
// into the image.
type copyOp struct {
	From    string   // the build stage (--from)
	Sources []string // paths in that stage
	Dest    string   // path in the image; a directory if it ends in /
	UID     int      // owner (--chown), -1: root
	GID     int
}

// finalStage is what the last stage of a Dockerfile builds on scratch:
// the files it copies and the image config its other instructions set.
type finalStage struct {
	Copies []copyOp
	Config v1.Config
}

// instruction is one logical line of a Dockerfile.
type instruction struct {
	Line int
	Cmd  string // upper case
	Args string
}

// readInstructions splits a Dockerfile into instructions, joining lines
// continued with a backslash and dropping comments and blank lines.
func readInstructions(r io.Reader) ([]instruction, error) {
	var out []instruction
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		cont := strings.HasSuffix(line, "\\")
		cur.WriteString(strings.TrimSuffix(line, "\\"))
		cur.WriteByte(' ')
		if cont {
			continue
		}
		cmd, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		out = append(out, instruction{Line: start, Cmd: strings.ToUpper(cmd), Args: strings.TrimSpace(args)})
		cur.Reset()
	}
	if cur.Len() > 0 {
		return nil, fmt.Errorf("line %d: continued past the end of the file", start)
	}
	return out, sc.Err()
}

// parseFinalStage reads the instructions of the last stage of a
// Dockerfile, which must build on scratch. An instruction it does not
// know is an error, so that the image built from it never silently
// differs from the one docker build makes.
func parseFinalStage(r io.Reader) (finalStage, error) {
	ins, err := readInstructions(r)
	if err != nil {
		return finalStage{}, err
	}
	last := -1
	for i, in := range ins {
		if in.Cmd == "FROM" {
			last = i
		}
	}
	if last < 0 {
		return finalStage{}, fmt.Errorf("no FROM")
	}
	if base, _, _ := strings.Cut(ins[last].Args, " "); base != "scratch" {
		return finalStage{}, fmt.Errorf("line %d: the final stage must build FROM scratch, not %s", ins[last].Line, base)
	}
	var st finalStage
	for _, in := range ins[last+1:] {
		if err := st.apply(in); err != nil {
			return finalStage{}, fmt.Errorf("line %d: %s: %v", in.Line, in.Cmd, err)
		}
	}
	return st, nil
}

// apply adds one instruction of the final stage to st.
func (st *finalStage) apply(in instruction) error {
	c := &st.Config
	var err error
	switch in.Cmd {
	case "COPY":
		var op copyOp
		op, err = parseCopy(in.Args)
		st.Copies = append(st.Copies, op)
	case "ENV":
		var kv []string
		kv, err = parseEnv(in.Args)
		c.Env = append(c.Env, kv...)
	case "USER":
		c.User = in.Args
	case "WORKDIR":
		c.WorkingDir = in.Args
	case "STOPSIGNAL":
		c.StopSignal = in.Args
	case "VOLUME":
		err = addSet(&c.Volumes, in.Args, "")
	case "EXPOSE":
		err = addSet(&c.ExposedPorts, in.Args, "/tcp")
	case "ENTRYPOINT":
		c.Entrypoint, err = execForm(in.Args)
	case "CMD":
		c.Cmd, err = execForm(in.Args)
	case "HEALTHCHECK":
		c.Healthcheck, err = parseHealthcheck(in.Args)
	default:
		err = fmt.Errorf("not supported in the final stage by this builder")
	}
	return err
}

// parseCopy reads COPY --from=STAGE [--chown=UID:GID] SRC... DEST.
func parseCopy(args string) (copyOp, error) {
	op := copyOp{UID: -1, GID: -1}
	var paths []string
	for _, f := range strings.Fields(args) {
		switch {
		case strings.HasPrefix(f, "--from="):
			op.From = strings.TrimPrefix(f, "--from=")
		case strings.HasPrefix(f, "--chown="):
			u, g, _ := strings.Cut(strings.TrimPrefix(f, "--chown="), ":")
			if g == "" {
				g = u
			}
			var e1, e2 error
			op.UID, e1 = strconv.Atoi(u)
			op.GID, e2 = strconv.Atoi(g)
			if e1 != nil || e2 != nil {
				return op, fmt.Errorf("--chown %q: numeric ids only", f)
			}
		case strings.HasPrefix(f, "--"):
			return op, fmt.Errorf("option %s not supported", f)
		default:
			paths = append(paths, f)
		}
	}
	if op.From == "" || len(paths) < 2 {
		return op, fmt.Errorf("want --from=STAGE SRC... DEST")
	}
	op.Sources, op.Dest = paths[:len(paths)-1], paths[len(paths)-1]
	if len(op.Sources) > 1 && !strings.HasSuffix(op.Dest, "/") {
		return op, fmt.Errorf("several sources need a destination ending in /")
	}
	return op, nil
}

// parseEnv reads ENV K=V [K=V...] (values unquoted or in double quotes
// without spaces inside) into K=V strings.
func parseEnv(args string) ([]string, error) {
	var kv []string
	for _, f := range strings.Fields(args) {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q: want KEY=VALUE", f)
		}
		kv = append(kv, k+"="+strings.Trim(v, `"`))
	}
	return kv, nil
}

// addSet adds the JSON array or space-separated words of args to *set,
// with suffix added to a word that has no "/" (EXPOSE's protocol).
func addSet(set *map[string]struct{}, args, suffix string) error {
	words := strings.Fields(args)
	if strings.HasPrefix(args, "[") {
		var err error
		if words, err = execForm(args); err != nil {
			return err
		}
	}
	if *set == nil {
		*set = map[string]struct{}{}
	}
	for _, w := range words {
		if suffix != "" && !strings.Contains(w, "/") {
			w += suffix
		}
		(*set)[w] = struct{}{}
	}
	return nil
}

// execForm reads a JSON array of strings: the exec form of ENTRYPOINT,
// CMD and HEALTHCHECK CMD (scratch has no shell for the shell form).
func execForm(args string) ([]string, error) {
	var a []string
	if err := json.Unmarshal([]byte(args), &a); err != nil || len(a) == 0 {
		return nil, fmt.Errorf("want the exec form, a JSON array of strings: %s", args)
	}
	return a, nil
}

// parseHealthcheck reads HEALTHCHECK [--interval=D --timeout=D
// --start-period=D --retries=N] CMD [...] or HEALTHCHECK NONE.
func parseHealthcheck(args string) (*v1.HealthConfig, error) {
	hc := &v1.HealthConfig{}
	for {
		f, rest, _ := strings.Cut(args, " ")
		if !strings.HasPrefix(f, "--") {
			break
		}
		args = strings.TrimSpace(rest)
		name, val, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		var err error
		switch name {
		case "interval":
			hc.Interval, err = time.ParseDuration(val)
		case "timeout":
			hc.Timeout, err = time.ParseDuration(val)
		case "start-period":
			hc.StartPeriod, err = time.ParseDuration(val)
		case "retries":
			hc.Retries, err = strconv.Atoi(val)
		default:
			err = fmt.Errorf("option not supported")
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
	}
	if args == "NONE" {
		return &v1.HealthConfig{Test: []string{"NONE"}}, nil
	}
	cmd, rest, _ := strings.Cut(args, " ")
	if cmd != "CMD" {
		return nil, fmt.Errorf("want CMD [...] or NONE")
	}
	test, err := execForm(strings.TrimSpace(rest))
	if err != nil {
		return nil, err
	}
	hc.Test = append([]string{"CMD"}, test...)
	return hc, nil
}
