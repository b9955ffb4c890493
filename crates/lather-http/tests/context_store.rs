//! The `context-store` service over real sockets: contexts set, read, changed and removed
//! by URI; owner tokens and identities; versions; the size, count and lifetime bounds;
//! a redb file that outlives the server; faults for each refusal.

use crate::support;

use lather_envelope::{FaultKind, SoapVersion, WSSE_NS};
use lather_test_util::ScratchDir;
use support::*;

const LC: &str = "urn:lather:context";
const CONTENTS: &str = r#"<wsa:ReplyTo xmlns:wsa="http://www.w3.org/2005/08/addressing"><wsa:Address>http://client.example/reply</wsa:Address></wsa:ReplyTo><wsa:To xmlns:wsa="http://www.w3.org/2005/08/addressing">http://service.example/echo</wsa:To>"#;

async fn store(extra: &str) -> TestServer {
    TestServer::start(&format!(
        "[[service]]\nname = \"ctx\"\npath = \"/ctx\"\nbuiltin = \"context-store\"\n{extra}"
    ))
    .await
}

async fn call(server: &TestServer, payload: &str) -> Answer {
    call_with(server, "", payload).await
}

async fn call_with(server: &TestServer, header: &str, payload: &str) -> Answer {
    post(
        server.addr,
        "/ctx",
        SoapVersion::V12,
        envelope(SoapVersion::V12, header, payload),
    )
    .await
}

fn set(fields: &str, contents: &str) -> String {
    format!(
        r#"<lc:SetContext xmlns:lc="{LC}">{fields}<lc:Contents>{contents}</lc:Contents></lc:SetContext>"#
    )
}

fn op(name: &str, fields: &str) -> String {
    format!(r#"<lc:{name} xmlns:lc="{LC}">{fields}</lc:{name}>"#)
}

#[tokio::test]
async fn a_minted_context_is_read_back_by_its_owner_only_and_changes_version_by_version() {
    let server = store("").await;
    let created = call(&server, &set("", CONTENTS)).await;
    assert_eq!(created.status, 200, "{}", created.text());
    let uri = field(&created, "wsctx:context-identifier");
    assert!(uri.starts_with("urn:uuid:"), "{uri}");
    assert_eq!(field(&created, "lc:Version"), "1");
    assert!(
        field(&created, "wsctx:context-service").ends_with("/ctx"),
        "{}",
        created.text()
    );
    let token = field(&created, "lc:Token");
    assert_eq!(token.len(), 48);

    // Without the token an owner-only context is not readable.
    let anonymous = call(
        &server,
        &op("GetContext", &format!("<lc:Uri>{uri}</lc:Uri>")),
    )
    .await;
    assert_app_fault(&anonymous, "NotContextOwner", 403);
    assert!(anonymous.text().contains(&uri), "{}", anonymous.text());

    let read = call(
        &server,
        &op(
            "GetContext",
            &format!("<lc:Uri>{uri}</lc:Uri><lc:Token>{token}</lc:Token>"),
        ),
    )
    .await;
    assert_eq!(read.status, 200, "{}", read.text());
    assert_eq!(field(&read, "lc:Contents"), CONTENTS);
    assert_eq!(field(&read, "lc:ETag"), field(&created, "lc:ETag"));
    assert_eq!(
        field(&read, "lc:Digest"),
        lather_context::contents_digest(CONTENTS.as_bytes())
    );

    // A change by the owner: version 2, a new ETag, no new token.
    let changed = call(
        &server,
        &set(
            &format!(
                "<lc:Uri>{uri}</lc:Uri><lc:Token>{token}</lc:Token><lc:IfVersion>1</lc:IfVersion>"
            ),
            "<x:v xmlns:x=\"urn:x\">2</x:v>",
        ),
    )
    .await;
    assert_eq!(changed.status, 200, "{}", changed.text());
    assert_eq!(field(&changed, "lc:Version"), "2");
    assert_ne!(field(&changed, "lc:ETag"), field(&created, "lc:ETag"));
    assert!(!changed.text().contains("<lc:Token>"), "{}", changed.text());

    // A stale conditional write and a stranger's write are refused.
    let stale = call(
        &server,
        &set(
            &format!(
                "<lc:Uri>{uri}</lc:Uri><lc:Token>{token}</lc:Token><lc:IfVersion>1</lc:IfVersion>"
            ),
            "<x:v xmlns:x=\"urn:x\">3</x:v>",
        ),
    )
    .await;
    assert_app_fault(&stale, "VersionConflict", 409);
    let stranger = call(
        &server,
        &set(
            &format!("<lc:Uri>{uri}</lc:Uri><lc:Token>guess</lc:Token>"),
            "<x:v xmlns:x=\"urn:x\"/>",
        ),
    )
    .await;
    assert_app_fault(&stranger, "NotContextOwner", 403);

    // Removed by its owner (named by a wsctx:context reference), then unknown.
    let removed = call(
        &server,
        &op(
            "RemoveContext",
            &format!(
                "<wsctx:context xmlns:wsctx=\"http://docs.oasis-open.org/ws-caf/2005/10/wsctx\"><wsctx:context-identifier>{uri}</wsctx:context-identifier></wsctx:context><lc:Token>{token}</lc:Token>"
            ),
        ),
    )
    .await;
    assert_eq!(removed.status, 200, "{}", removed.text());
    let gone = call(
        &server,
        &op(
            "GetContext",
            &format!("<lc:Uri>{uri}</lc:Uri><lc:Token>{token}</lc:Token>"),
        ),
    )
    .await;
    assert_app_fault(&gone, "UnknownContext", 404);
}

#[tokio::test]
async fn a_public_context_is_readable_by_anyone_but_changed_by_its_owner_only() {
    let server = store("").await;
    let created = call(
        &server,
        &set(
            "<lc:Uri>urn:example:conversation-7</lc:Uri><lc:Readers>anyone</lc:Readers>",
            CONTENTS,
        ),
    )
    .await;
    assert_eq!(
        field(&created, "wsctx:context-identifier"),
        "urn:example:conversation-7"
    );
    let read = call(
        &server,
        &op("GetContext", "<lc:Uri>urn:example:conversation-7</lc:Uri>"),
    )
    .await;
    assert_eq!(read.status, 200, "{}", read.text());
    assert_eq!(field(&read, "lc:Contents"), CONTENTS);
    let overwrite = call(
        &server,
        &set(
            "<lc:Uri>urn:example:conversation-7</lc:Uri>",
            "<x:v xmlns:x=\"urn:x\"/>",
        ),
    )
    .await;
    assert_app_fault(&overwrite, "NotContextOwner", 403);
    let remove = call(
        &server,
        &op(
            "RemoveContext",
            "<lc:Uri>urn:example:conversation-7</lc:Uri>",
        ),
    )
    .await;
    assert_app_fault(&remove, "NotContextOwner", 403);
}

#[tokio::test]
async fn the_size_count_and_lifetime_bounds_hold() {
    let server = store("max_context_bytes = 200\nmax_contexts = 2\n").await;
    let big = format!("<x:v xmlns:x=\"urn:x\">{}</x:v>", "a".repeat(300));
    assert_app_fault(&call(&server, &set("", &big)).await, "ContextTooLarge", 413);
    for _ in 0..2 {
        let ok = call(&server, &set("", "<x:v xmlns:x=\"urn:x\"/>")).await;
        assert_eq!(ok.status, 200, "{}", ok.text());
    }
    let full = call(&server, &set("", "<x:v xmlns:x=\"urn:x\"/>")).await;
    assert_app_fault(&full, "StoreFull", 503);

    // A context past its lifetime is expired, and an expired one frees its place.
    let short = store("max_contexts = 1\n").await;
    let created = call(
        &short,
        &set(
            "<lc:TtlSeconds>1</lc:TtlSeconds><lc:Readers>anyone</lc:Readers>",
            "<x:v xmlns:x=\"urn:x\"/>",
        ),
    )
    .await;
    let uri = field(&created, "wsctx:context-identifier");
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    let expired = call(
        &short,
        &op("GetContext", &format!("<lc:Uri>{uri}</lc:Uri>")),
    )
    .await;
    assert_app_fault(&expired, "ContextExpired", 404);
    let next = call(&short, &set("", "<x:v xmlns:x=\"urn:x\"/>")).await;
    assert_eq!(next.status, 200, "{}", next.text());
}

#[tokio::test]
async fn bad_requests_get_clear_faults() {
    let server = store("").await;
    let no_contents = call(&server, &op("SetContext", "")).await;
    assert_app_fault(&no_contents, "InvalidContextRequest", 400);
    assert!(
        no_contents.text().contains("lc:Contents"),
        "{}",
        no_contents.text()
    );
    let no_uri = call(&server, &op("GetContext", "")).await;
    assert_app_fault(&no_uri, "InvalidContextRequest", 400);
    let bad_uri = call(
        &server,
        &set("<lc:Uri>no scheme</lc:Uri>", "<x:v xmlns:x=\"urn:x\"/>"),
    )
    .await;
    assert_app_fault(&bad_uri, "InvalidContextUri", 400);
    let text = call(&server, &set("", "just text")).await;
    assert_app_fault(&text, "InvalidContextRequest", 400);
    let bad_ttl = call(
        &server,
        &set(
            "<lc:TtlSeconds>soon</lc:TtlSeconds>",
            "<x:v xmlns:x=\"urn:x\"/>",
        ),
    )
    .await;
    assert_app_fault(&bad_ttl, "InvalidContextRequest", 400);
    let other = call(&server, "<m:ping xmlns:m=\"urn:m\"/>").await;
    other.assert_fault(FaultKind::UnknownOperation, SoapVersion::V12);
}

#[tokio::test]
async fn contexts_in_a_redb_file_outlive_the_server() {
    let dir = ScratchDir::new("ctx");
    let file = dir.join("contexts.redb");
    let keys = format!("store = \"{}\"\n", file.display());
    let mut first = store(&keys).await;
    let created = call(&first, &set("<lc:Readers>anyone</lc:Readers>", CONTENTS)).await;
    let uri = field(&created, "wsctx:context-identifier");
    first.shutdown().await.unwrap().unwrap();
    drop(first);

    let second = store(&keys).await;
    let read = call(
        &second,
        &op("GetContext", &format!("<lc:Uri>{uri}</lc:Uri>")),
    )
    .await;
    assert_eq!(read.status, 200, "{}", read.text());
    assert_eq!(field(&read, "lc:Contents"), CONTENTS);
    assert_eq!(field(&read, "lc:Version"), "1");
}

#[tokio::test]
async fn an_authenticated_identity_owns_what_it_creates() {
    let dir = ScratchDir::new("ctx-users");
    let users = dir.write("users", "alice:s3cret\nbob:hunter2\n");
    let server = TestServer::start(&format!(
        "[handlers.auth]\nkind = \"wsse-username\"\nusers_file = \"{}\"\n\
         [[service]]\nname = \"ctx\"\npath = \"/ctx\"\nbuiltin = \"context-store\"\nrequest = [[\"auth\"]]\n",
        users.display()
    ))
    .await;
    let login = |user: &str, password: &str| {
        format!(
            r#"<wsse:Security xmlns:wsse="{WSSE_NS}"><wsse:UsernameToken><wsse:Username>{user}</wsse:Username><wsse:Password>{password}</wsse:Password></wsse:UsernameToken></wsse:Security>"#
        )
    };
    let created = call_with(&server, &login("alice", "s3cret"), &set("", CONTENTS)).await;
    assert_eq!(created.status, 200, "{}", created.text());
    assert!(
        !created.text().contains("<lc:Token>"),
        "an identity needs no token: {}",
        created.text()
    );
    let uri = field(&created, "wsctx:context-identifier");
    let by_bob = call_with(
        &server,
        &login("bob", "hunter2"),
        &op("GetContext", &format!("<lc:Uri>{uri}</lc:Uri>")),
    )
    .await;
    assert_app_fault(&by_bob, "NotContextOwner", 403);
    let by_alice = call_with(
        &server,
        &login("alice", "s3cret"),
        &op("RemoveContext", &format!("<lc:Uri>{uri}</lc:Uri>")),
    )
    .await;
    assert_eq!(by_alice.status, 200, "{}", by_alice.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_nats_two_nodes_share_one_store() {
    let nats = lather_test_util::nats::NatsServer::start_jetstream("ctx-two");
    let config = format!(
        "[nats]\nurl = \"{}\"\n[[service]]\nname = \"ctx\"\npath = \"/ctx\"\nbuiltin = \"context-store\"\n",
        nats.url()
    );
    let (a, b) = (
        TestServer::start(&config).await,
        TestServer::start(&config).await,
    );
    let created = call(&a, &set("<lc:Readers>anyone</lc:Readers>", CONTENTS)).await;
    assert_eq!(created.status, 200, "{}", created.text());
    let uri = field(&created, "wsctx:context-identifier");
    let token = field(&created, "lc:Token");
    let read = call(&b, &op("GetContext", &format!("<lc:Uri>{uri}</lc:Uri>"))).await;
    assert_eq!(read.status, 200, "{}", read.text());
    assert_eq!(field(&read, "lc:Contents"), CONTENTS);
    // The owner's token works on the other node; a stale version does not.
    let changed = call(
        &b,
        &set(
            &format!(
                "<lc:Uri>{uri}</lc:Uri><lc:Token>{token}</lc:Token><lc:IfVersion>1</lc:IfVersion>"
            ),
            "<x:v xmlns:x=\"urn:x\"/>",
        ),
    )
    .await;
    assert_eq!(field(&changed, "lc:Version"), "2", "{}", changed.text());
    let stale = call(
        &a,
        &set(
            &format!(
                "<lc:Uri>{uri}</lc:Uri><lc:Token>{token}</lc:Token><lc:IfVersion>1</lc:IfVersion>"
            ),
            "<x:v xmlns:x=\"urn:x\"/>",
        ),
    )
    .await;
    assert_app_fault(&stale, "VersionConflict", 409);
}

#[test]
fn a_shared_store_refuses_a_file_and_local_keys_need_no_nats() {
    let base = "[[service]]\nname = \"ctx\"\npath = \"/ctx\"\nbuiltin = \"context-store\"\n";
    let with_file = format!("[nats]\nurl = \"nats://127.0.0.1:4222\"\n{base}store = \"c.redb\"\n");
    let err = lather_config::Config::from_toml(&with_file, "t.toml").unwrap_err();
    assert!(err.to_string().contains("contexts = \"local\""), "{err}");
    let local = format!(
        "[nats]\nurl = \"nats://127.0.0.1:4222\"\n{base}store = \"c.redb\"\ncontexts = \"local\"\n"
    );
    lather_config::Config::from_toml(&local, "t.toml").unwrap();
    let no_nats = format!("{base}contexts = \"nats\"\n");
    let err = lather_config::Config::from_toml(&no_nats, "t.toml").unwrap_err();
    assert!(err.to_string().contains("needs a [nats] table"), "{err}");
}
