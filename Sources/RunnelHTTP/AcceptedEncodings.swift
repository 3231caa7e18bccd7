import RunnelServer

/// Whether a request's `Accept-Encoding` fields (RFC 9110, 12.5.3) let its answer be gzip'd:
/// `gzip` (or its old name `x-gzip`) listed with a weight over 0, or, when neither is listed,
/// `*` with a weight over 0. `gzip;q=0` refuses it, as does a request without the field: the
/// RFC lets a server pick any coding then, but a client that did not ask (`curl` without
/// `--compressed`, `nc`) would get bytes it cannot read. A weight that is not a `qvalue`
/// makes its element count as refused. Names and parameters are matched in any case.
///
/// Thread rules: a value; pure. Lifetime rule: holds nothing.
struct AcceptedEncodings {
    let allowsGzip: Bool

    /// From the values of every `Accept-Encoding` field, in order.
    init(fields: [String]) {
        var gzip: Bool?
        var any: Bool?
        for element in fields.joined(separator: ",").split(separator: ",") {
            let parts = element.split(separator: ";")
            guard let name = parts.first?.trimmingSpaces().lowercased(), !name.isEmpty else { continue }
            let accepted = Self.weight(parts.dropFirst()).map { $0 > 0 } ?? false
            switch name {
            case "gzip", "x-gzip": gzip = (gzip ?? false) || accepted
            case "*": any = (any ?? false) || accepted
            default: break
            }
        }
        allowsGzip = gzip ?? any ?? false
    }

    /// The weight in thousandths from an element's parameters (1000 without `q`); nil when
    /// `q` is not a qvalue.
    private static func weight(_ parameters: ArraySlice<Substring>) -> Int? {
        for parameter in parameters {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingSpaces().lowercased() == "q" else { continue }
            return qvalue(pair[1].trimmingSpaces())
        }
        return 1000
    }

    /// `0`, `0.5`, `1.000` (RFC 9110's qvalue) as thousandths; nil for anything else.
    private static func qvalue(_ text: String) -> Int? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, whole == "0" || whole == "1" else { return nil }
        let fraction = parts.count == 2 ? parts[1] : ""
        guard fraction.count <= 3, fraction.allSatisfy({ $0 >= "0" && $0 <= "9" }) else { return nil }
        let digits = fraction.reduce(0) { $0 * 10 + Int($1.asciiValue! - 48) }
        let thousandths = digits * [1000, 100, 10, 1][fraction.count]
        if whole == "1" { return thousandths == 0 ? 1000 : nil }
        return thousandths
    }
}
