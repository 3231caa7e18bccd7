import RunnelProtocol

/// A clustered node's figures for `stats.cluster` and the `runnel_cluster_*` metrics, read at
/// one moment. Thread rules: a value. Lifetime rule: owns its figures.
struct ClusterFigures: SharedFigures {
    let name: String
    let node: String
    let linkUp: Bool
    /// Nodes heard from in the last 10 s, this one included.
    let nodes: Int
    /// Values this node sent its cluster, those it did not send (its send queue full, or cnats
    /// refusing them), and those it received from other nodes.
    let valuesSent: UInt64
    let valuesNotSent: UInt64
    let valuesReceived: UInt64
    /// Values of other nodes this node knows it missed (gaps in their sequences).
    let valuesMissed: UInt64
    /// How often the link went down.
    let linkLosses: UInt64

    /// `{"name":N,"node":N,"link":"up"|"down","nodes":K}`, `stats`'s `cluster` member.
    func write(into line: inout ServerLineWriter) {
        line.member("cluster") { json in
            json.append("{\"name\":")
            json.writeString(name)
            json.append(",\"node\":")
            json.writeString(node)
            json.append(linkUp ? ",\"link\":\"up\",\"nodes\":" : ",\"link\":\"down\",\"nodes\":")
            json.writeInteger(nodes)
            json.append("}")
        }
    }

    /// The `runnel_cluster_*` series of `/metrics`.
    func writeMetrics(into metrics: inout PrometheusExposition) {
        metrics.metric(
            "runnel_cluster_link_up", .gauge, help: "1 while this node's link to the cluster's NATS is up.",
            linkUp ? 1 : 0)
        metrics.metric(
            "runnel_cluster_nodes", .gauge, help: "Nodes heard from in the last 10 s, this one included.",
            Double(nodes))
        metrics.metric(
            "runnel_cluster_values_sent_total", .counter, help: "Values of plain subjects sent to the other nodes.",
            Double(valuesSent))
        metrics.metric(
            "runnel_cluster_values_dropped_total", .counter,
            help:
                "Plain values other nodes wanted that this node did not send (send queue full, or NATS refused them).",
            Double(valuesNotSent))
        metrics.metric(
            "runnel_cluster_values_received_total", .counter, help: "Values received from other nodes.",
            Double(valuesReceived))
        metrics.metric(
            "runnel_cluster_values_missed_total", .counter,
            help: "Values of other nodes known to be missed (gaps in their sequences), told as dropped events.",
            Double(valuesMissed))
        metrics.metric(
            "runnel_cluster_link_losses_total", .counter, help: "Times the link to NATS went down.",
            Double(linkLosses))
    }
}
