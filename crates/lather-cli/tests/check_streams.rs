//! `lather check` on configurations with message streams: the `[stream]` listener and the
//! services that accept or send streams are explained; a stream key where it does not
//! belong is an error naming the file and line.

use crate::serving::check_text as check;

#[test]
fn streams_are_explained() {
    let out = check(
        "streams-ok.toml",
        "[stream]\nlisten = \"0.0.0.0:7100\"\npublic_port = 17100\nmax_schemas = 8\n\n[[service]]\nname = \"far\"\npath = \"/far\"\nbuiltin = \"echo\"\naccept_streams = true\n\n[[service]]\nname = \"near\"\npath = \"/near\"\nupstream = [\"http://far.example:8080/far\"]\nstream = \"tcp\"\nstream_on_error = \"resend\"\nstream_retry_s = 5\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout
            .contains("message streams: accepted on 0.0.0.0:7100 (told to senders as port 17100)"),
        "{stdout}"
    );
    assert!(stdout.contains("8 schemas each"), "{stdout}");
    assert!(stdout.contains("accepts message streams"), "{stdout}");
    assert!(stdout.contains("sent again over SOAP/HTTP"), "{stdout}");
    assert!(stdout.contains("retried after 5 s"), "{stdout}");
}

#[test]
fn a_stream_key_out_of_place_names_its_line() {
    let out = check(
        "streams-bad.toml",
        "[[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\nstream_on_error = \"fault\"\n",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("streams-bad.toml"), "{stderr}");
    assert!(stderr.contains("streams-bad.toml:5:"), "{stderr}");
    assert!(
        stderr.contains("stream_on_error: only a gateway"),
        "{stderr}"
    );
}
