import RunnelUV

/// What cnats's threads hand a clustered node's loop, through the link's `LoopInbox`: messages
/// of its subscriptions and of its streams' consumers, JetStream's answers to its publishes,
/// the link going down or coming back, and cnats's errors, in the order they were posted.
enum ClusterDelivery: Sendable {
    case message(NATSMessage)
    case stream(NATSStreamMessage)
    case published(id: String, answer: NATSPublishAnswer)
    case link(up: Bool)
    case error(String, dropped: Bool)
}
