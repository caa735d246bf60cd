// The traffic generator's types: its options, the captures it writes, and
// the ground truth of every I/O and message.
import type { IoRecordJson, MessageRecordJson, PortSpec } from "@rdma-telemetry/contract";

export type Fault =
  | { kind: "slow-target"; target: number; fromNs: number; toNs: number; extraNs: number }
  | { kind: "congestion"; fromNs: number; toNs: number; extraNs: number; ecnFraction: number }
  | { kind: "slow-host"; host: number; fromNs: number; toNs: number; extraNs: number }
  | { kind: "gpu-idle"; host: number; fromNs: number; toNs: number; extraNs: number }
  | { kind: "loss"; host: number; fromNs: number; toNs: number; probability: number };

export interface GeneratorOptions {
  seed: number;
  /** simulated time span */
  durationNs: number;
  /** capture clock at simulated time 0, ns since the epoch */
  epochNs: bigint;
  layout: "two-tor" | "single";
  hosts: number;
  targets: number;
  /**
   * ToRs the hosts sit under (two-tor layout): host i under the (i mod N)-th,
   * named tor-c1..tor-cN when more than one (tor-c when one)
   */
  computeTors: number;
  /** ToRs the targets sit under, target j under the (j mod M)-th: tor-s1..tor-sM (tor-s when one) */
  storageTors: number;
  /** I/O queues of each host's controller on each target (one per CPU) */
  queuesPerHost: number;
  /** tags per queue: the CIDs a queue can have in flight */
  queueDepth: number;
  /** NVMe I/Os per second per host (arriving in bursts of 1..burstMax per queue) */
  ioRate: number;
  burstMax: number;
  /** writes up to this size carry their data in the command capsule (0: none) */
  inlineDataBytes: number;
  /** share of responses missing from a capture (the compute side's, the storage side's or both) */
  responseLoss: number;
  /** share of I/Os that fail with an NVMe error status */
  errorRate: number;
  /** share of hosts whose controllers connect during the capture (RDMA CM seen); the others were connected before */
  connectDuringCapture: number;
  /**
   * Jobs that end and start during the capture: this share of the hosts is
   * split in two, the first half ending its I/O at 40 % of the capture, the
   * second starting its own at 60 % (their queues stay connected, with
   * keep-alives). 0: every host does I/O throughout.
   */
  jobTurnover: number;
  /** I/O sizes in bytes, drawn uniformly */
  ioSizes: readonly number[];
  /**
   * Bytes one RDMA operation of the target moves at most: nvmet's data is a
   * list of 4 KiB pages and each RDMA WRITE or READ it posts takes at most the
   * device's scatter/gather entries (mlx5: 30), so a larger I/O's data goes in
   * several RDMA WRITE messages (read) or READ REQUESTs (write), each with its
   * own RETH (the same R_Key, the next address).
   */
  rdmaOpMaxBytes: number;
  readFraction: number;
  /**
   * share of the commands that are Flush (no data, no record: a switch
   * measures reads and writes): Linux hosts flush nvmet targets, which
   * report a volatile write cache, on every fsync
   */
  flushShare: number;
  /** gradient-sync message size and count per ring step */
  gradientBytes: number;
  gradientGapNs: number;
  /**
   * NCCL channels: connections between each host and the next in the ring,
   * each with its own QPs, carrying gradientBytes / channels of every step
   * at its share of the link
   */
  gradientChannels: number;
  /** the RDMA path MTU every queue and flow uses (256, 512, 1024, 2048 or 4096 bytes; RoCE NICs give 1024 on an Ethernet MTU of 1500, 4096 on jumbo frames) */
  mtu: number;
  /** link speed in bit/s (serialization of each packet) */
  linkBps: number;
  fabricDelayNs: number;
  mediaReadNs: number;
  mediaWriteNs: number;
  targetPrepNs: number;
  hostPrepNs: number;
  faults: readonly Fault[];
  /** bytes of each packet kept in the captures (the rest is counted, not stored) */
  snaplen: number;
  /**
   * Address families: 4 or 6 for every host and target; "mixed": even-numbered
   * hosts IPv4, odd-numbered IPv6, targets both (each host reaches them in its
   * own family), gradient sync in one ring per family.
   */
  ip: 4 | 6 | "mixed";
  /** share of gradient-sync messages whose packets a reordering path displaces (0: none) */
  reorderShare: number;
  /** how many places at most a reordered packet is displaced (1..) */
  reorderMaxDisplacement: number;
  /** share of the reordered messages in which one packet is lost after the switch and resent go-back-N */
  reorderLoss: number;
  /**
   * share of the NVMe queues whose packets cross the fabric over reordering
   * paths (packet spraying, adaptive routing): each packet is delayed by up
   * to storageReorderMaxDisplacement packet times, so it can arrive at the
   * far ToR after later packets of its queue (0: none)
   */
  storageReorderShare: number;
  storageReorderMaxDisplacement: number;
}

/** A capture's topology: the contract's, with room to build it port by port. */
export interface Topology {
  ports: PortSpec[];
}

export interface SwitchCapture {
  name: string;
  topology: Topology;
  packets: Array<{ timestampNs: bigint; data: Buffer; originalLength: number }>;
}

/**
 * What the records must say of one NVMe I/O (SPEC §3), from what each switch
 * saw of it: the I/O record's own fields, by the contract's names, and what
 * the self-check needs besides.
 */
export type IoTruth = Pick<IoRecordJson, "host" | "target" | "host_qp" | "target_qp" | "cid" | "cmd_psn" | "op" | "bytes" | "in_capsule" | "incomplete" | "e2e_c_ns" | "e2e_s_ns" | "rtt_ns" | "dal_ns" | "dpl_ns"> & {
  /** CQE status without the phase bit, as seen; 0 where no response was seen */
  status: number;
  /** false: no vantage could attribute the I/O to a queue; no record, the switches count it untracked */
  record: boolean;
  /** capture time of the command at the compute-side / storage-side switch (null: not tracked there) */
  cmdCNs: bigint | null;
  cmdSNs: bigint | null;
  /** the record's cmd_unix_ns: the compute side's, else the storage side's */
  cmd_unix_ns: bigint | null;
  c_seen: boolean;
  s_seen: boolean;
  /** vantages (0 to 2) that saw the command and no response, their capture ending within the I/O timeout (1 s) of it: "answer unknown" there, counted as given up with the switch silent */
  unanswered_at_end: number;
};

/** What the message record of one RDMA WRITE must say, by the contract's names, and what the self-check needs besides. */
export type MessageTruth = Pick<MessageRecordJson, "src" | "dst" | "dest_qp" | "first_psn" | "last_psn" | "bytes" | "packets" | "retransmitted" | "fct_ns" | "fet_bps" | "fnr" | "ecn_ce_packets" | "gap_ns"> & {
  /** the switch whose record it is */
  switch: string;
  firstNs: bigint;
  /** retransmissions of this message seen after its last PSN was first seen */
  late_retransmitted: number;
  /** every packet of this message seen after its last PSN was first seen (late retransmissions and reordered packets): in the flow's interval figures only */
  late_packets: number;
  /**
   * Those packets in the order seen: each one's time after firstNs, whether
   * its PSN had been seen before, and its ECN-CE mark. Each counts in the
   * flow's figures for the interval it arrives in (SPEC §4).
   */
  late: Array<{ after_first_ns: number; retransmitted: boolean; ecn_ce: boolean }>;
  /** the switch saw the message's packets out of the order they were sent in (a reordering path) */
  reordered: boolean;
};

export interface GeneratedTraffic {
  options: GeneratorOptions;
  switches: SwitchCapture[];
  ios: IoTruth[];
  messages: MessageTruth[];
  cnps: number;
}

