package bpf

// NET_RX softirq work by destination socket owner (tcp_probe, netif_receive_skb).
//go:generate go tool bpf2go -tags linux -target amd64 -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3" SoftirqOwner softirq_owner.bpf.c -- -I.
