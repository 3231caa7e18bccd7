import RunnelJSON

/// One line from the server, classified: a reply (`ok`) or a stream event (`ev`).
///
/// The line's bytes are kept so a `next` event's value can be handed on exactly as the server
/// sent it (`valueRange`). The line is validated once (`JSONValidator`), then its top-level
/// members are found in place (`JSONValueBytes`): only the envelope's small fields are decoded,
/// never the value.
///
/// Thread rules: immutable, `Sendable`. Lifetime rule: none (it owns a copy of its bytes).
package struct ServerLine: Sendable {
    package enum Kind: Equatable, Sendable {
        /// `{"ok":...}`: a reply; `ok` tells success.
        case reply(ok: Bool)
        /// `{"ev":NAME,...}`: a stream event (`next`, `error`, `completed`, `dropped`, `closing`;
        /// a map's `removed` and `synced`).
        case event(String)
    }

    package let bytes: [UInt8]
    package let kind: Kind
    /// The exact bytes of `ref`, when present (replies only).
    package let ref: String?
    package let sid: String?
    /// Where the `value` of a `next` event is in `bytes`.
    package let valueRange: Range<Int>?
    /// The source subject of a pattern subscription's `next` (or `removed`) event.
    package let subject: String?
    /// A map's key, in its `next` and `removed` events (version 1.3).
    package let key: String?
    /// Why a map's key went, in its `removed` event: `deleted` or `expired`.
    package let reason: String?
    /// For failures: `code`, `message`, `stage`.
    package let code: String?
    package let message: String?
    package let stage: Int?
    /// For `dropped`: how many events were lost.
    package let count: Int?
    /// A `next` (or `removed`) event's position (`EPOCH:SEQ`), when the subscription asked for
    /// positions; a map's `synced`'s, the map's own position then.
    package let pos: String?
    /// A `next` (or `removed`) event's publish time (Unix ms), when the subscription asked for times.
    package let ts: Int64?
    /// The `sub` reply's answer to `from`: whether the subscription resumed.
    package let resumed: Bool?

    /// Classifies `bytes`; nil when the line is not a JSON object with `ok` or `ev`.
    package init?(_ bytes: [UInt8]) {
        let parsed = bytes.withUnsafeBytes { raw -> Parsed? in
            guard !raw.isEmpty, JSONValidator().isValid(raw) else { return nil }
            let line = JSONValueBytes(validated: raw)
            guard line.kind == .object else { return nil }
            return Parsed(line)
        }
        guard let parsed else { return nil }
        self.bytes = bytes
        kind = parsed.kind
        ref = parsed.ref
        sid = parsed.sid
        valueRange = parsed.valueRange
        subject = parsed.subject
        key = parsed.key
        reason = parsed.reason
        code = parsed.code
        message = parsed.message
        stage = parsed.stage
        count = parsed.count
        pos = parsed.pos
        ts = parsed.ts
        resumed = parsed.resumed
    }

    /// The line as text, for `--events` and `--json`.
    package var text: String { String(decoding: bytes, as: UTF8.self) }

    /// The failure this error reply, error event or `closing` line describes.
    package var error: RunnelError { RunnelError(code: code ?? "unknown", message: message ?? "", stage: stage) }

    /// The failure as `runnel` prints it: `CODE: MESSAGE (stage N)`.
    package var failureDescription: String {
        var text = "\(code ?? "unknown"): \(message ?? "")"
        if let stage { text += " (stage \(stage))" }
        return text
    }

    /// The whole line decoded, for replies handed to callers (`RunnelClient.request`).
    package var object: JSONObject {
        guard case .object(let object)? = try? JSONParser().parse(bytes) else { return JSONObject() }
        return object
    }

    /// The fields read from a validated line while its bytes are borrowed.
    private struct Parsed {
        var kind: Kind
        var ref: String?
        var sid: String?
        var valueRange: Range<Int>?
        var subject: String?
        var key: String?
        var reason: String?
        var code: String?
        var message: String?
        var stage: Int?
        var count: Int?
        var pos: String?
        var ts: Int64?
        var resumed: Bool?

        init?(_ line: JSONValueBytes) {
            func member(_ name: String) -> JSONValueBytes? { line.lastMember(named: name).value }
            func string(_ name: String) -> String? {
                guard case .string(let text)? = try? member(name)?.decoded() else { return nil }
                return text
            }
            func integer(_ name: String) -> Int? {
                guard case .number(let number)? = try? member(name)?.decoded() else { return nil }
                return Int(exactly: number)
            }
            func bool(_ name: String) -> Bool? {
                guard case .bool(let flag)? = try? member(name)?.decoded() else { return nil }
                return flag
            }
            func failure() -> (String?, String?, Int?) { (string("code"), string("message"), integer("stage")) }
            if let ok = member("ok") {
                guard ok.kind == .boolean else { return nil }
                let flag = bool("ok") == true
                kind = .reply(ok: flag)
                ref = member("ref").map { String(decoding: $0.bytes, as: UTF8.self) }
                if !flag { (code, message, stage) = failure() }
                sid = string("sid")
                resumed = bool("resumed")
            } else if let name = string("ev") {
                kind = .event(name)
                sid = string("sid")
                switch name {
                case "next", "removed":
                    if name == "next" { valueRange = member("value")?.range } else { reason = string("reason") }
                    subject = string("subject")
                    key = string("key")
                    pos = string("pos")
                    ts = integer("ts").map(Int64.init)
                case "error", "closing":
                    (code, message, stage) = failure()
                case "dropped":
                    count = integer("count")
                case "synced":
                    pos = string("pos")
                default:
                    break
                }
            } else {
                return nil
            }
        }
    }
}
