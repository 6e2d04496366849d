package workload

import "time"

// Result is the outcome of one Run.
type Result struct {
	Elapsed time.Duration
	Streams []StreamResult
}

// StreamResult counts one stream; sender fields are filled by the sender
// thread, receiver fields by the receiver thread.
type StreamResult struct {
	SentBytes, ReceivedBytes int64
	SendCalls, RecvCalls     int64 // data-path syscalls (io_uring: SQEs submitted)

	// Zero-copy facts the workload observes itself.
	ZCCompletions   int64 // MSG_ZEROCOPY: sends covered by notifications; io_uring_zc: notification CQEs
	ZCCopied        int64 // of those, reported COPIED
	ZCNotifications int64 // error-queue messages / notification CQEs read

	RxMappedBytes, RxCopiedBytes int64 // TCP_ZEROCOPY_RECEIVE: mapped vs copied
	PayloadErrors                int64 // received chunks that did not match the pattern

	Congestion string // the sender socket's congestion control
	MSS        int    // the sender socket's MSS after the handshake
	// TxDevice is the device the sender's bytes left through; TxNoSG:
	// it had scatter-gather off when the stream was set up.
	TxDevice string
	TxNoSG   bool
}

func (s *StreamResult) add(o StreamResult) {
	s.SentBytes += o.SentBytes
	s.ReceivedBytes += o.ReceivedBytes
	s.SendCalls += o.SendCalls
	s.RecvCalls += o.RecvCalls
	s.ZCCompletions += o.ZCCompletions
	s.ZCCopied += o.ZCCopied
	s.ZCNotifications += o.ZCNotifications
	s.RxMappedBytes += o.RxMappedBytes
	s.RxCopiedBytes += o.RxCopiedBytes
	s.PayloadErrors += o.PayloadErrors
	if s.Congestion == "" {
		s.Congestion = o.Congestion
	}
	s.MSS = max(s.MSS, o.MSS)
	if s.TxDevice == "" {
		s.TxDevice = o.TxDevice
	}
	s.TxNoSG = s.TxNoSG || o.TxNoSG
}

// Total sums all streams.
func (r Result) Total() StreamResult {
	var t StreamResult
	for _, s := range r.Streams {
		t.add(s)
	}
	return t
}

// SentBytes is the total over all streams.
func (r Result) SentBytes() int64 { return r.Total().SentBytes }

// ReceivedBytes is the total over all streams.
func (r Result) ReceivedBytes() int64 { return r.Total().ReceivedBytes }

// ThroughputBps is received bits per second over Elapsed.
func (r Result) ThroughputBps() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.ReceivedBytes()) * 8 / r.Elapsed.Seconds()
}
