// Which chart an alert is drawn on: the chart of its figure only (an RTT
// alert on the RTT chart, not on the DAL and DPL charts). Loaded by the page
// before app.js; a plain script, so that it is also read as it is served.

/** Chart id by the figure an alert's metric names (the part before any ".p99"). */
const ALERT_CHARTS = {
  e2e_c_ns: "e2e", e2e_s_ns: "e2e", incomplete: "e2e", errors: "e2e",
  rtt_ns: "rtt", dal_ns: "dal", dpl_ns: "dpl",
  fct_ns: "fct", fet_bps: "fet", fnr: "fnr", retransmitted: "fnr",
  ecn_ce_packets: "ecn", cnp_packets: "ecn", gap_ns: "gap",
};

/**
 * The chart an alert's marker goes on: by its metric; a metric no chart
 * shows goes on the first chart of its scope (e2e for a pair, host or
 * target; FCT for a flow), so that no alert goes unmarked.
 */
function alertChart(alert) {
  const figure = String(alert.metric).split(".")[0];
  return ALERT_CHARTS[figure] ?? (alert.scope === "flow" ? "fct" : "e2e");
}
