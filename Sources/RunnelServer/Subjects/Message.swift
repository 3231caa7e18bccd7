import RunnelUV

/// A subject's name with its JSON string form encoded once, shared by every event that
/// names it (pattern subscriptions' `"subject"`, expressions' `$subject`). Immutable.
public final class SubjectLabel: Sendable {
    public let name: String
    /// `"name"` as a JSON string, quotes included.
    public let json: ByteBuffer

    public init(_ name: String) {
        self.name = name
        var builder = JSONWriter()
        builder.writeString(name)
        self.json = builder.makeBuffer()
    }
}

/// What flows through a named subject and its subscribers' chains: a value and the subject it
/// was published to. The value keeps the exact bytes the client sent until a stage computes a
/// new one; its `Payload` is shared by every subscriber, so it is decoded and encoded at most
/// once (loop thread only, like the payload).
public struct Message: Sendable {
    public let label: SubjectLabel
    public let value: Payload

    public init(label: SubjectLabel, value: Payload) {
        self.label = label
        self.value = value
    }

    /// A published value, kept as its exact bytes.
    public init(label: SubjectLabel, raw: RawJSON) {
        self.init(label: label, value: Payload(raw: raw))
    }

    /// A value a stage computed.
    public init(label: SubjectLabel, computed: JSONValue) {
        self.init(label: label, value: Payload(computed: computed))
    }
}

/// Equality of the values only, as `distinctUntilChanged` and `ignore` compare them: the
/// subjects the values came from are not compared.
extension Message: Equatable {
    public static func == (lhs: Message, rhs: Message) -> Bool { lhs.value.isEquivalent(to: rhs.value) }
}
