//! The engine as the vault's compile check of proxies' transforms.

use tessera_domain::TransformCheck;
use tessera_transform_runtime::CompileCheck;

#[test]
fn a_transform_that_compiles_passes() {
    assert_eq!(
        CompileCheck.check("module.exports = async function (req) { return req.args; };"),
        Ok(())
    );
    assert_eq!(CompileCheck.check("module.exports=async r=>r"), Ok(()));
}

#[test]
fn a_syntax_error_is_refused_with_the_engines_message_and_line() {
    let message = CompileCheck
        .check("module.exports = async function (req) {\n  return (;\n};")
        .expect_err("syntax error");
    assert!(!message.is_empty());
    assert!(
        message.contains("line 2") || message.contains(":2"),
        "{message}"
    );
}
