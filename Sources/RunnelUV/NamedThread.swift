import CLibUV

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A joinable POSIX thread running one block: the event loop's own thread, and the durable
/// journal's writer. Start it with `init`; `join` waits for the block to return.
public final class NamedThread: @unchecked Sendable {
    private var thread: pthread_t

    /// Starts a thread named `name` (at most 15 bytes are kept) running `body`.
    public init(name: String, _ body: @escaping @Sendable () -> Void) {
        final class Start {
            let name: String
            let body: @Sendable () -> Void
            init(name: String, body: @escaping @Sendable () -> Void) {
                self.name = name
                self.body = body
            }
        }
        let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(
            &thread, nil,
            { raw in
                let start = Unmanaged<Start>.fromOpaque(raw!).takeRetainedValue()
                runnel_set_thread_name(start.name)
                start.body()
                return nil
            }, start)
        precondition(status == 0, "pthread_create failed: \(status)")
        self.thread = thread
    }

    /// Waits for the thread to finish.
    public func join() {
        let status = pthread_join(thread, nil)
        precondition(status == 0, "pthread_join failed: \(status)")
    }
}
