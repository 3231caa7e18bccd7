#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Thread-local storage of one object reference per thread, through `pthread_key_t`.
///
/// The stored reference is unretained: whoever sets it keeps the object alive for as long as
/// it is set (schedulers set themselves only for the duration of a block they run).
final class ThreadLocalReference<Object: AnyObject>: @unchecked Sendable {
    private let key: pthread_key_t

    init() {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "pthread_key_create failed: \(status)")
        self.key = key
    }

    var value: Object? {
        get {
            guard let raw = pthread_getspecific(key) else { return nil }
            return Unmanaged<Object>.fromOpaque(raw).takeUnretainedValue()
        }
        set {
            let raw = newValue.map { Unmanaged.passUnretained($0).toOpaque() }
            pthread_setspecific(key, raw)
        }
    }
}
