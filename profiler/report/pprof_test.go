package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

func stacksDoc() *Document {
	return &Document{Schema: Schema, Command: "run", DurationNS: 1e9, Stacks: []Stack{
		{Process: "zcprof", PID: 5, Side: "sender", Cell: "write→read 64K ×1", Path: "tx.write", Category: "copy.tx",
			Frames: []string{"do_syscall_64", "tcp_sendmsg_locked", "_copy_from_iter"}, Samples: 3, NS: 750.4},
		{Process: "zcprof", PID: 5, Side: "sender", Cell: "write→read 64K ×1", Path: "tx.write", Category: "tcp.tx",
			Frames: []string{"do_syscall_64", "tcp_sendmsg_locked", "tcp_push"}, Samples: 1, NS: 249.6},
	}}
}

func TestPprofValuesAndLabels(t *testing.T) {
	var buf bytes.Buffer
	if err := WritePprof(&buf, stacksDoc()); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sample) != 2 || p.SampleType[1].Unit != "nanoseconds" {
		t.Fatalf("%d samples, types %v", len(p.Sample), p.SampleType)
	}
	var total int64
	for _, s := range p.Sample {
		total += s.Value[1]
		if s.Location[0].Line[0].Function.Name == "_copy_from_iter" {
			if s.Value[0] != 3 || s.Value[1] != 750 || s.Label["category"][0] != "copy.tx" ||
				s.Label["side"][0] != "sender" || s.Label["path"][0] != "tx.write" || s.NumLabel["pid"][0] != 5 {
				t.Errorf("copy sample %v %v %v", s.Value, s.Label, s.NumLabel)
			}
			if root := s.Location[len(s.Location)-1].Line[0].Function.Name; root != "do_syscall_64" {
				t.Errorf("root frame %s", root)
			}
		}
	}
	if total != 1000 {
		t.Errorf("total %d ns, want 1000", total)
	}
}

func TestFoldedLines(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteFolded(&buf, stacksDoc()); err != nil {
		t.Fatal(err)
	}
	want := "write→read_64K_×1;sender;tx.write;do_syscall_64;tcp_sendmsg_locked;_copy_from_iter 750\n" +
		"write→read_64K_×1;sender;tx.write;do_syscall_64;tcp_sendmsg_locked;tcp_push 250\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
	if strings.Count(buf.String(), " ") != 2 {
		t.Error("a frame contains a space")
	}
}
