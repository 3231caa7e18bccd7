/// Metrics written in the Prometheus text exposition format, version 0.0.4: each metric family
/// a `# HELP` line, a `# TYPE` line and its samples, one per line, `\n`-terminated.
///
/// The caller names families and labels (the format's rules: `[a-zA-Z_:][a-zA-Z0-9_:]*`,
/// base units, `_total` on counters); help text and label values are escaped here. A value
/// type, built once per scrape.
package struct PrometheusExposition {
    enum MetricType: String {
        case counter, gauge, histogram
    }

    private(set) var text = ""

    /// A family of one unlabelled sample.
    mutating func metric(_ name: String, _ type: MetricType, help: String, _ value: Double) {
        header(name, type, help: help)
        sample(name, value)
    }

    /// A family of one sample per label value, in the order given.
    mutating func metric(
        _ name: String, _ type: MetricType, help: String, label: String, _ samples: [(String, Double)]
    ) {
        header(name, type, help: help)
        for (labelValue, value) in samples { sample(name, labels: [(label, labelValue)], value) }
    }

    /// A histogram: `counts[i]` observations fell at or below `upperBounds[i]` and above the
    /// bound before it; `counts` has one more entry, for those above the last bound.
    mutating func histogram(_ name: String, help: String, upperBounds: [Double], counts: [UInt64], sum: Double) {
        header(name, .histogram, help: help)
        histogramSeries(name, labels: [], upperBounds: upperBounds, counts: counts, sum: sum)
    }

    /// A histogram with one series per value of `label`, in the order given, each as above.
    mutating func histogram(
        _ name: String, help: String, upperBounds: [Double], label: String,
        _ series: [(labelValue: String, counts: [UInt64], sum: Double)]
    ) {
        header(name, .histogram, help: help)
        for one in series {
            histogramSeries(
                name, labels: [(label, one.labelValue)], upperBounds: upperBounds, counts: one.counts, sum: one.sum)
        }
    }

    private mutating func histogramSeries(
        _ name: String, labels: [(String, String)], upperBounds: [Double], counts: [UInt64], sum: Double
    ) {
        precondition(counts.count == upperBounds.count + 1, "one count per bucket and one above them")
        var cumulative: UInt64 = 0
        for (bound, count) in zip(upperBounds, counts) {
            cumulative += count
            sample(name + "_bucket", labels: labels + [("le", Self.format(bound))], Double(cumulative))
        }
        cumulative += counts[counts.count - 1]
        sample(name + "_bucket", labels: labels + [("le", "+Inf")], Double(cumulative))
        sample(name + "_sum", labels: labels, sum)
        sample(name + "_count", labels: labels, Double(cumulative))
    }

    private mutating func header(_ name: String, _ type: MetricType, help: String) {
        text += "# HELP \(name) \(Self.escape(help, quotes: false))\n# TYPE \(name) \(type.rawValue)\n"
    }

    private mutating func sample(_ name: String, labels: [(String, String)] = [], _ value: Double) {
        text += name
        if !labels.isEmpty {
            text += "{"
            text += labels.map { "\($0.0)=\"\(Self.escape($0.1, quotes: true))\"" }.joined(separator: ",")
            text += "}"
        }
        text += " \(Self.format(value))\n"
    }

    /// Whole numbers without a fraction (counters read as integers), others as Swift prints
    /// them (`0.00025`, `1e-05`), both of which the format's float syntax accepts.
    static func format(_ value: Double) -> String {
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value.isNaN { return "NaN" }
        if abs(value) < 1e15, let whole = Int64(exactly: value) { return String(whole) }
        return "\(value)"
    }

    /// Help text escapes `\` and line feeds; label values also `"`.
    private static func escape(_ text: String, quotes: Bool) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\"" where quotes: escaped += "\\\""
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
