import Foundation
import PackagePlugin

/// Stamps the build with the version `runneld --version` and `runnel --version` print: before
/// every build, a shell writes `BuildVersion.swift` (`let stampedVersion = "…"`) into the
/// plugin's work directory, which is compiled with the target. The version is `$RUNNEL_VERSION`
/// when set (a package or image built from a tarball), else `git describe --tags --always
/// --dirty` of the package (a release tag such as `v1.2.0`, or the tag and the commits since it,
/// or the commit alone), else `unknown`. The file is rewritten only when the text changed, so
/// an unchanged version recompiles and relinks nothing.
/// Lifetime rule: stateless; SwiftPM runs it in a process of its own while planning a build.
@main
struct StampVersion: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) async throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "Stamped")
        let file = output.appending(path: "BuildVersion.swift").path(percentEncoded: false)
        let package = context.package.directoryURL.path(percentEncoded: false)
        // Double quotes and backslashes cannot reach the Swift string: git refs and tags allow
        // neither, and they are stripped from $RUNNEL_VERSION.
        let script = """
            v=${RUNNEL_VERSION:-$(git -C "$1" describe --tags --always --dirty 2>/dev/null)}
            v=$(printf '%s' "${v:-unknown}" | tr -d '"\\\\\\n')
            text="let stampedVersion = \\"$v\\""
            mkdir -p "${2%/*}"
            [ "$(cat "$2" 2>/dev/null)" = "$text" ] || printf '%s\\n' "$text" > "$2"
            """
        return [
            .prebuildCommand(
                displayName: "Stamping the version (git describe)",
                executable: URL(filePath: "/bin/sh"),
                arguments: ["-c", script, "stamp", package, file],
                environment: ["PATH", "RUNNEL_VERSION"].reduce(into: [:]) { environment, name in
                    environment[name] = ProcessInfo.processInfo.environment[name]
                },
                outputFilesDirectory: output
            )
        ]
    }
}
