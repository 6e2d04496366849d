package doctor

// configOptions are the kernel options doctor reports.
var configOptions = []string{
	"CONFIG_HZ",
	"CONFIG_IRQ_TIME_ACCOUNTING", // with it, softirq time vanishes from tasks
	"CONFIG_TICK_CPU_ACCOUNTING",
	"CONFIG_KPROBES",
	"CONFIG_FPROBE", // kprobe.multi needs it
	"CONFIG_FUNCTION_TRACER",
	"CONFIG_DEBUG_INFO_BTF",
	"CONFIG_PREEMPT_RT", // softirqs preemptible in task context, threaded IRQs
}

// pickConfig keeps only the options doctor reports; unset ones read "n".
func pickConfig(cfg map[string]string) map[string]string {
	if cfg == nil {
		return nil
	}
	out := make(map[string]string, len(configOptions))
	for _, name := range configOptions {
		v, ok := cfg[name]
		if !ok {
			v = "n"
		}
		out[name] = v
	}
	return out
}
