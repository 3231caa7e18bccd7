import RunnelServer

/// One line from the server, classified: a reply (`ok`) or a stream event (`ev`).
///
/// The line's bytes are kept so a `next` event's value can be printed exactly as the server
/// sent it (`valueRange`). Parsing uses the server's own validating `EnvelopeScanner`: the
/// envelope's field ranges are found in one pass, nothing else is decoded. Immutable.
struct ServerLine {
    enum Kind: Equatable {
        /// `{"ok":...}`: a reply; `ok` tells success.
        case reply(ok: Bool)
        /// `{"ev":NAME,...}`: a stream event (`next`, `error`, `completed`, `dropped`,
        /// `closing`).
        case event(String)
    }

    let bytes: [UInt8]
    let kind: Kind
    /// The exact bytes of `ref`, when present (replies only).
    let ref: String?
    let sid: String?
    /// Where the `value` of a `next` event is in `bytes`.
    let valueRange: Range<Int>?
    /// The source subject of a pattern subscription's `next` event.
    let subject: String?
    /// For failures: `code`, `message`, `stage`.
    let code: String?
    let message: String?
    let stage: Int?
    /// For `dropped`: how many events were lost.
    let count: Int?
    /// A `next` event's position (`EPOCH:SEQ`), when the subscription asked for positions.
    let pos: String?
    /// The `sub` reply's answer to `from`: whether the subscription resumed.
    let resumed: Bool?

    /// Classifies `bytes`; nil when the line is not a JSON object with `ok` or `ev`.
    init?(_ bytes: [UInt8]) {
        self.bytes = bytes
        let parsed = bytes.withUnsafeBytes { raw -> Parsed? in
            guard let scanned = try? EnvelopeScanner().scan(raw) else { return nil }
            return Parsed(scanned)
        }
        guard let parsed else { return nil }
        kind = parsed.kind
        ref = parsed.ref
        sid = parsed.sid
        valueRange = parsed.valueRange
        subject = parsed.subject
        code = parsed.code
        message = parsed.message
        stage = parsed.stage
        count = parsed.count
        pos = parsed.pos
        resumed = parsed.resumed
    }

    /// The line as text, for `--events` and `--json`.
    var text: String { String(decoding: bytes, as: UTF8.self) }

    /// The failure this error reply or error event describes.
    var failureDescription: String {
        var text = "\(code ?? "unknown"): \(message ?? "")"
        if let stage { text += " (stage \(stage))" }
        return text
    }

    /// The fields read from a scanned line while its bytes are borrowed.
    private struct Parsed {
        var kind: Kind
        var ref: String?
        var sid: String?
        var valueRange: Range<Int>?
        var subject: String?
        var code: String?
        var message: String?
        var stage: Int?
        var count: Int?
        var pos: String?
        var resumed: Bool?

        init?(_ line: ScannedEnvelope) {
            if let ok = line.field(named: "ok") {
                guard let flag = line.bool(ok) else { return nil }
                kind = .reply(ok: flag)
                ref = line.ref.map { line.text($0) }
                if !flag { Self.readFailure(line, into: &self) }
                sid = line.sid.flatMap { line.string($0) }
                resumed = line.field(named: "resumed").flatMap { line.bool($0) }
            } else if let ev = line.field(named: "ev"), let name = line.string(ev) {
                kind = .event(name)
                sid = line.sid.flatMap { line.string($0) }
                switch name {
                case "next":
                    valueRange = line.value?.range
                    subject = line.subject.flatMap { line.string($0) }
                    pos = line.field(named: "pos").flatMap { line.string($0) }
                case "error", "closing":
                    Self.readFailure(line, into: &self)
                case "dropped":
                    count = line.field(named: "count").flatMap { line.number($0) }.flatMap { Int(exactly: $0) }
                default:
                    break
                }
            } else {
                return nil
            }
        }

        private static func readFailure(_ line: ScannedEnvelope, into parsed: inout Parsed) {
            parsed.code = line.field(named: "code").flatMap { line.string($0) }
            parsed.message = line.message.flatMap { line.string($0) }
            parsed.stage = line.field(named: "stage").flatMap { line.number($0) }.flatMap { Int(exactly: $0) }
        }
    }
}
