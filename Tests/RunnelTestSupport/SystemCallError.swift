/// A POSIX call a test helper made that failed, with the `errno` it left.
///
/// A value, safe on any thread.
public struct SystemCallError: Error, CustomStringConvertible {
    /// The call, with what it was called on where that helps (`connect to 127.0.0.1:9`).
    public let call: String
    public let errno: Int32

    public init(_ call: String, _ errno: Int32) {
        self.call = call
        self.errno = errno
    }

    public var description: String { "\(call) failed: errno \(errno)" }
}
