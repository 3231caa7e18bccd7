/// A count one subscription's stage keeps (values held by an accumulating library operator),
/// so that the stage can end the subscription with "limit" before the operator's buffer
/// grows past `max_buffer_values`.
///
/// Loop thread only (one per subscription, made inside `Signal.deferred`): both the stage's
/// sources and its timers run on the one loop thread, so no lock is taken.
final class StageCounter: @unchecked Sendable {
    var count = 0
}
