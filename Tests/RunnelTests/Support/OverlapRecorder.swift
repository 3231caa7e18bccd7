import Runnel
import RunnelTestSupport
import Synchronization

/// Records events, like `Recorder`, and counts those delivered while another was still being
/// delivered, which a subscriber's contract forbids: for operators that merge sources driven
/// from several threads, which must serialise what they send.
///
/// Thread rules: events may arrive on any thread; that is the point. Read `overlaps` and
/// `recorder` once the sources are done.
final class OverlapRecorder<Value: Sendable>: Subscriber {
    let recorder = Recorder<Value>()
    private let inside = Atomic<Int>(0)
    private let overlapCount = Atomic<Int>(0)

    /// How many events arrived while another was being delivered.
    var overlaps: Int { overlapCount.load(ordering: .relaxed) }

    private func record(_ event: Event<Value>) {
        if inside.add(1, ordering: .acquiringAndReleasing).newValue > 1 {
            overlapCount.add(1, ordering: .relaxed)
        }
        // Linger a little so that an unserialised second thread would be caught inside.
        for _ in 0..<50 { _ = inside.load(ordering: .relaxed) }
        event.send(to: recorder)
        inside.subtract(1, ordering: .acquiringAndReleasing)
    }

    func sendNext(_ value: Value) { record(.next(value)) }
    func sendError(_ error: any Error) { record(.error(error)) }
    func sendCompleted() { record(.completed) }
    func didSubscribe(with disposable: CompoundDisposable) {}
}
