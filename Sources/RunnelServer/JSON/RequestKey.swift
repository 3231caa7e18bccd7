/// The top-level request fields the scanner picks out while it validates a line; any other
/// field is reachable through `ScannedRequest.field(named:)`.
public enum RequestKey: Int, CaseIterable, Sendable {
    case op, ref, subject, sid, value, ops, kind, capacity, message, prefix, token

    /// The field's name on the wire.
    public var name: String {
        switch self {
        case .op: return "op"
        case .ref: return "ref"
        case .subject: return "subject"
        case .sid: return "sid"
        case .value: return "value"
        case .ops: return "ops"
        case .kind: return "kind"
        case .capacity: return "capacity"
        case .message: return "message"
        case .prefix: return "prefix"
        case .token: return "token"
        }
    }

    /// The key spelled by the unescaped UTF-8 `name`, compared without allocating.
    static func matching(_ name: UnsafeRawBufferPointer) -> RequestKey? {
        switch name.count {
        case 2: return ByteMatch.equals(name, "op") ? .op : nil
        case 3:
            if ByteMatch.equals(name, "ref") { return .ref }
            if ByteMatch.equals(name, "sid") { return .sid }
            if ByteMatch.equals(name, "ops") { return .ops }
            return nil
        case 4: return ByteMatch.equals(name, "kind") ? .kind : nil
        case 5:
            if ByteMatch.equals(name, "value") { return .value }
            if ByteMatch.equals(name, "token") { return .token }
            return nil
        case 6: return ByteMatch.equals(name, "prefix") ? .prefix : nil
        case 7:
            if ByteMatch.equals(name, "subject") { return .subject }
            if ByteMatch.equals(name, "message") { return .message }
            return nil
        case 8: return ByteMatch.equals(name, "capacity") ? .capacity : nil
        default: return nil
        }
    }
}

/// Byte comparisons against ASCII literals, without building Strings.
enum ByteMatch {
    @inline(__always) static func equals(_ bytes: UnsafeRawBufferPointer, _ literal: StaticString) -> Bool {
        guard bytes.count == literal.utf8CodeUnitCount else { return false }
        let expected = literal.utf8Start
        for index in 0..<bytes.count where bytes[index] != expected[index] { return false }
        return true
    }
}
