import RunnelJSON
import RunnelProtocol

/// A subject as the cluster defines it, the value of its key in the cluster's key-value bucket:
/// its kind, capacity, whether it is durable, a behavior's initial value, a map's `max_keys`,
/// its epoch, and how it ended, if it did. Every node makes its own entry from it, in that epoch.
///
/// Stored as JSON: `{"kind":"replay","capacity":5,"durable":false,"epoch":"E"}`, with
/// `retain_ms` (a replay subject's `retain_s`, a map's `ttl_s`, in milliseconds), `max_keys`
/// (a map's), `initial` (a behavior's initial value, as JSON) and `ended` (`{"error":"message"}`, or
/// `{"completed":true}`) where they apply. Thread rules: a value.
struct ClusterDefinition: Sendable {
    enum Ending: Equatable, Sendable {
        case completed
        case error(String)
    }

    var kind: SubjectKind
    var capacity: Int?
    var retainMilliseconds: Int64?
    /// A map's, and only a map's.
    var maxKeys: Int?
    var durable: Bool
    var initial: RawJSON?
    var epoch: String
    var ended: Ending?

    init(
        kind: SubjectKind, capacity: Int?, retainMilliseconds: Int64? = nil, maxKeys: Int? = nil, durable: Bool,
        initial: RawJSON?, epoch: String, ended: Ending? = nil
    ) {
        self.kind = kind
        self.capacity = capacity
        self.retainMilliseconds = retainMilliseconds
        self.maxKeys = maxKeys
        self.durable = durable
        self.initial = initial
        self.epoch = epoch
        self.ended = ended
    }

    /// Whether `entry` is the subject this defines, in the same shape (not its epoch).
    func hasShape(of entry: SubjectEntry) -> Bool {
        kind == entry.kind && capacity == entry.capacity && retainMilliseconds == entry.retainMilliseconds
            && maxKeys == entry.map?.maxKeys && durable == entry.isDurable
    }

    /// Whether `other` defines a subject of the same shape (not its epoch).
    func hasShape(of other: ClusterDefinition) -> Bool {
        kind == other.kind && capacity == other.capacity && retainMilliseconds == other.retainMilliseconds
            && maxKeys == other.maxKeys && durable == other.durable
    }

    /// "replay (capacity 5, durable)", for messages.
    var shape: String {
        kind.shape(capacity: capacity, retainMilliseconds: retainMilliseconds, maxKeys: maxKeys, durable: durable)
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
        if let maxKeys {
            json.append(",\"max_keys\":")
            json.writeInteger(maxKeys)
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
        var maxKeys: Int?
        if case .number(let number)? = object["max_keys"] { maxKeys = Int(exactly: number) }
        guard (kind == .map) == (maxKeys != nil) else { return nil }
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
            kind: kind, capacity: capacity, retainMilliseconds: retainMilliseconds, maxKeys: maxKeys, durable: durable,
            initial: initial, epoch: epoch, ended: ended)
    }

    // MARK: Keys

    /// The key of subject `name` in the bucket (`NATSTokenEscaping`, dots kept). Valid names
    /// have no empty token, so neither has the key.
    static func key(of name: String) -> String { NATSTokenEscaping.escape(name, keepingDots: true) }

    /// The subject name a key stands for; nil for a key `key(of:)` does not make.
    static func name(ofKey key: Substring) -> String? {
        NATSTokenEscaping.unescape(key, keepingDots: true).flatMap { SubjectName.isValidName($0) ? $0 : nil }
    }
}
