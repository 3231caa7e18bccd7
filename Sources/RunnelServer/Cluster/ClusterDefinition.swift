import RunnelJSON
import RunnelProtocol

/// A subject as the cluster defines it, the value of its key in the cluster's key-value bucket:
/// its kind, capacity, whether it is durable, a behavior's initial value, its epoch, and how
/// it ended, if it did. Every node makes its own entry from it, in that epoch.
///
/// Stored as JSON: `{"kind":"replay","capacity":5,"durable":false,"epoch":"E"}`, with
/// `retain_ms` (a replay subject's `retain_s`, in milliseconds), `initial` (a behavior's
/// initial value, as JSON) and `ended` (`{"error":"message"}`, or
/// `{"completed":true}`) where they apply. Thread rules: a value.
struct ClusterDefinition: Sendable {
    enum Ending: Equatable, Sendable {
        case completed
        case error(String)
    }

    var kind: SubjectKind
    var capacity: Int?
    var retainMilliseconds: Int64?
    var durable: Bool
    var initial: RawJSON?
    var epoch: String
    var ended: Ending?

    init(
        kind: SubjectKind, capacity: Int?, retainMilliseconds: Int64? = nil, durable: Bool, initial: RawJSON?,
        epoch: String, ended: Ending? = nil
    ) {
        self.kind = kind
        self.capacity = capacity
        self.retainMilliseconds = retainMilliseconds
        self.durable = durable
        self.initial = initial
        self.epoch = epoch
        self.ended = ended
    }

    /// Whether `entry` is the subject this defines, in the same shape (not its epoch).
    func hasShape(of entry: SubjectEntry) -> Bool {
        kind == entry.kind && capacity == entry.capacity && retainMilliseconds == entry.retainMilliseconds
            && durable == entry.isDurable
    }

    /// Whether `other` defines a subject of the same shape (not its epoch).
    func hasShape(of other: ClusterDefinition) -> Bool {
        kind == other.kind && capacity == other.capacity && retainMilliseconds == other.retainMilliseconds
            && durable == other.durable
    }

    /// "replay (capacity 5, durable)", for messages.
    var shape: String {
        kind.shape(capacity: capacity, retainMilliseconds: retainMilliseconds, durable: durable)
    }

    /// The JSON stored under the subject's key.
    var bytes: [UInt8] {
        var json = JSONWriter()
        json.append("{\"kind\":")
        json.writeString(kind.rawValue)
        if let capacity {
            json.append(",\"capacity\":")
            json.writeInteger(capacity)
        }
        if let retainMilliseconds {
            json.append(",\"retain_ms\":")
            json.writeInteger(Int(retainMilliseconds))
        }
        json.append(durable ? ",\"durable\":true,\"epoch\":" : ",\"durable\":false,\"epoch\":")
        json.writeString(epoch)
        if let initial {
            json.append(",\"initial\":")
            json.write(initial)
        }
        switch ended {
        case nil: break
        case .completed: json.append(",\"ended\":{\"completed\":true}")
        case .error(let message):
            json.append(",\"ended\":{\"error\":")
            json.writeString(message)
            json.append("}")
        }
        json.append("}")
        return json.makeBuffer().array
    }

    /// Reads what `bytes` says; nil when it is not a definition (written by something else).
    init?(bytes: [UInt8]) {
        guard case .object(let object)? = try? JSONParser().parse(bytes),
            case .string(let kindName)? = object["kind"], let kind = SubjectKind(rawValue: kindName),
            case .string(let epoch)? = object["epoch"], Epoch.isValid(epoch.utf8)
        else { return nil }
        var capacity: Int?
        if case .number(let number)? = object["capacity"] { capacity = Int(exactly: number) }
        guard (kind == .replay) == (capacity != nil) else { return nil }
        var retainMilliseconds: Int64?
        if case .number(let number)? = object["retain_ms"] { retainMilliseconds = Int64(exactly: number) }
        var durable = false
        if case .bool(let flag)? = object["durable"] { durable = flag }
        let initial = object["initial"].map { RawJSON(encoding: $0) }
        var ended: Ending?
        if case .object(let ending)? = object["ended"] {
            if case .string(let message)? = ending["error"] {
                ended = .error(message)
            } else {
                ended = .completed
            }
        }
        self.init(
            kind: kind, capacity: capacity, retainMilliseconds: retainMilliseconds, durable: durable, initial: initial,
            epoch: epoch, ended: ended)
    }

    // MARK: Keys

    /// The key of subject `name` in the bucket: bytes a key may hold (`A-Z a-z 0-9 - _ .`) as
    /// they are, every other byte (and `=`) as `=` and two hex digits. Valid names have no
    /// empty token, so neither has the key.
    static func key(of name: String) -> String {
        var key: [UInt8] = []
        key.reserveCapacity(name.utf8.count)
        for byte in name.utf8 {
            if isKeyByte(byte) {
                key.append(byte)
            } else {
                key.append(UInt8(ascii: "="))
                key.append(hexDigits[Int(byte >> 4)])
                key.append(hexDigits[Int(byte & 0xF)])
            }
        }
        return String(decoding: key, as: UTF8.self)
    }

    /// The subject name a key stands for; nil for a key `key(of:)` does not make.
    static func name(ofKey key: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = key.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "=") else {
                guard isKeyByte(byte) else { return nil }
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        let name = String(decoding: bytes, as: UTF8.self)
        return SubjectName.isValidName(name) ? name : nil
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    private static func isKeyByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
            return true
        default: return false
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
