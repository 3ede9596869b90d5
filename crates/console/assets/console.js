// Tessera console: progressive enhancements only. Every page works without this script;
// it adds copy buttons, line numbers in code editors, rows to repeating groups, rule ordering,
// Try it's "Insert" buttons and the type-dependent fields of the token form.
(function () {
  "use strict";

  function each(selector, fn, root) {
    Array.prototype.forEach.call((root || document).querySelectorAll(selector), fn);
  }

  // Copy buttons: copy the text of the element named by data-copy.
  each("[data-copy]", function (button) {
    button.addEventListener("click", function () {
      var target = document.getElementById(button.getAttribute("data-copy"));
      if (!target) { return; }
      var text = target.textContent;
      var done = function () {
        var label = button.textContent;
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = label; }, 2000);
      };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(text).then(done, function () { select(target); });
      } else {
        select(target);
      }
    });
  });

  function select(node) {
    var range = document.createRange();
    range.selectNodeContents(node);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  // Code editors: a gutter of line numbers, the line of a compile error marked.
  each("textarea[data-code-editor]", function (area) {
    var editor = area.parentNode;
    if (!editor.classList.contains("editor")) { return; }
    var gutter = document.createElement("pre");
    gutter.className = "gutter";
    gutter.setAttribute("aria-hidden", "true");
    editor.insertBefore(gutter, area);
    var field = editor.parentNode;
    var error = field.querySelector(".field-error");
    var match = error && /line (\d+)/.exec(error.textContent);
    var errorLine = match ? parseInt(match[1], 10) : 0;
    function render() {
      var count = area.value.split("\n").length;
      gutter.textContent = "";
      for (var i = 1; i <= count; i++) {
        var line = document.createElement("span");
        line.textContent = String(i);
        if (i === errorLine) { line.className = "error-line"; line.title = "compile error"; }
        gutter.appendChild(line);
        gutter.appendChild(document.createTextNode("\n"));
      }
      gutter.scrollTop = area.scrollTop;
    }
    area.addEventListener("input", render);
    area.addEventListener("scroll", function () { gutter.scrollTop = area.scrollTop; });
    render();
  });

  // Repeating groups (configuration entries, rules): "Add" clones the last row, emptied,
  // with the next index in its names and ids.
  function nextIndex(rows, prefix) {
    var max = -1;
    each("[name]", function (input) {
      var m = new RegExp("^" + prefix + "\\.(\\d+)\\.").exec(input.name);
      if (m) { max = Math.max(max, parseInt(m[1], 10)); }
    }, rows);
    return max + 1;
  }

  function renumber(node, prefix, index) {
    if (node.id) { node.id = node.id.replace(/\d+/, String(index)); }
    each("[name]", function (input) {
      input.name = input.name.replace(new RegExp("^" + prefix + "\\.\\d+\\."), prefix + "." + index + ".");
    }, node);
    each("[id]", function (el) {
      el.id = el.id.replace(/\d+/, String(index));
    }, node);
    each("label[for]", function (label) {
      label.htmlFor = label.htmlFor.replace(/\d+/, String(index));
    }, node);
    each("[aria-describedby]", function (el) { el.removeAttribute("aria-describedby"); }, node);
    each(".field-error", function (el) { el.parentNode.removeChild(el); }, node);
  }

  each("[data-add-row]", function (button) {
    var prefix = button.getAttribute("data-add-row");
    var rows = document.querySelector('[data-rows="' + prefix + '"]');
    if (!rows) { return; }
    button.hidden = false;
    button.addEventListener("click", function () {
      var last = rows.lastElementChild;
      var row = last.cloneNode(true);
      renumber(row, prefix, nextIndex(rows, prefix));
      each("input", function (input) {
        if (input.type === "checkbox") { input.checked = false; } else { input.value = ""; }
        input.removeAttribute("aria-invalid");
      }, row);
      row.classList.remove("invalid");
      rows.appendChild(row);
      wireRule(row);
      refreshRules();
      var first = row.querySelector("input");
      if (first) { first.focus(); }
    });
  });

  // Rules: move up or down (priorities follow the order shown), remove.
  function refreshRules() {
    var number = 0;
    each("[data-rule]", function (rule) {
      number += 1;
      var label = rule.querySelector("[data-rule-number]");
      if (label) { label.textContent = String(number); }
    });
  }

  function renumberPriorities() {
    var priority = 0;
    each("[data-rule]", function (rule) {
      var input = rule.querySelector('input[name$=".priority"]');
      var container = rule.querySelector('input[name$=".container"]');
      if (input && container && container.value.trim() !== "") {
        priority += 1;
        input.value = String(priority);
      }
    });
  }

  function wireRule(rule) {
    each("[data-move], [data-remove-rule]", function (button) {
      button.hidden = false;
      button.addEventListener("click", function () {
        var direction = button.getAttribute("data-move");
        if (direction === "up" && rule.previousElementSibling) {
          rule.parentNode.insertBefore(rule, rule.previousElementSibling);
        } else if (direction === "down" && rule.nextElementSibling) {
          rule.parentNode.insertBefore(rule.nextElementSibling, rule);
        } else if (!direction) {
          each("input", function (input) {
            if (input.type === "checkbox") { input.checked = false; } else { input.value = ""; }
          }, rule);
          if (rule.parentNode.children.length > 1) { rule.parentNode.removeChild(rule); }
        }
        renumberPriorities();
        refreshRules();
        button.focus();
      });
    }, rule);
  }
  each("[data-rule]", wireRule);

  // Try it's tokens: "Insert" puts the token's expression into the body, over the selection
  // if there is one, else in place of the placeholder if it is still there, else at the caret.
  each("[data-insert]", function (button) {
    var target = document.getElementById(button.getAttribute("data-insert-into"));
    if (!target) { return; }
    button.hidden = false;
    button.addEventListener("click", function () {
      var text = button.getAttribute("data-insert");
      var placeholder = button.getAttribute("data-placeholder") || "";
      var value = target.value;
      var start = target.selectionStart;
      var end = target.selectionEnd;
      var at = placeholder ? value.indexOf(placeholder) : -1;
      if (start === end && at >= 0) {
        start = at;
        end = at + placeholder.length;
      }
      target.value = value.slice(0, start) + text + value.slice(end);
      target.focus();
      target.setSelectionRange(start + text.length, start + text.length);
      target.dispatchEvent(new Event("input", { bubbles: true }));
    });
  });

  // The token form: only the chosen type's fields are shown and sent.
  each("form[data-token-form]", function (form) {
    var type = form.querySelector('select[name="type"]');
    if (!type) { return; }
    function show() {
      each("[data-token-type]", function (fieldset) {
        var on = fieldset.getAttribute("data-token-type") === type.value;
        fieldset.hidden = !on;
        fieldset.disabled = !on;
      }, form);
    }
    type.addEventListener("change", show);
    show();
  });
})();
