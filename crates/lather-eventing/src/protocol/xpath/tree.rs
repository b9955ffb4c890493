//! An event as a small tree for XPath filters: root, elements, attributes and text nodes
//! in one vector in document order (an element, then its attributes, then its content),
//! so a node's index is its document position.

/// What a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Root,
    Element,
    Attribute,
    Text,
}

/// One node.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) kind: Kind,
    pub(crate) parent: Option<usize>,
    /// Namespace URI (`""` for none), prefix as written, local name (elements, attributes).
    pub(crate) namespace: String,
    pub(crate) prefix: String,
    pub(crate) local: String,
    /// An attribute's value or a text node's text.
    pub(crate) value: String,
    /// Attributes (elements).
    pub(crate) attributes: Vec<usize>,
    /// Element and text children (root, elements).
    pub(crate) children: Vec<usize>,
    /// Index of the last node of its subtree (itself if none below).
    pub(crate) last: usize,
}

/// An event's tree; node 0 is the root.
#[derive(Debug, Clone)]
pub(crate) struct Tree {
    pub(crate) nodes: Vec<Node>,
}

impl Tree {
    /// The tree of `xml` (one element, standalone), or `None` if it is not well-formed.
    pub(crate) fn parse(xml: &str) -> Option<Tree> {
        let package = sxd_document::parser::parse(xml).ok()?;
        let document = package.as_document();
        let mut tree = Tree {
            nodes: vec![node(Kind::Root, None)],
        };
        // An explicit stack: the event's depth is not this function's.
        let mut stack: Vec<(sxd_document::dom::ChildOfRoot<'_>, usize)> = document
            .root()
            .children()
            .into_iter()
            .rev()
            .map(|c| (c, 0))
            .collect();
        let mut elements: Vec<(sxd_document::dom::ChildOfElement<'_>, usize)> = Vec::new();
        while let Some((child, parent)) = stack.pop() {
            if let Some(element) = child.element() {
                elements.push((sxd_document::dom::ChildOfElement::Element(element), parent));
            }
        }
        while let Some((child, parent)) = elements.pop() {
            match child {
                sxd_document::dom::ChildOfElement::Element(element) => {
                    let index = tree.nodes.len();
                    let name = element.name();
                    let mut n = node(Kind::Element, Some(parent));
                    n.namespace = name.namespace_uri().unwrap_or("").to_owned();
                    n.prefix = element.preferred_prefix().unwrap_or("").to_owned();
                    n.local = name.local_part().to_owned();
                    tree.nodes.push(n);
                    tree.nodes[parent].children.push(index);
                    for attribute in element.attributes() {
                        let a = tree.nodes.len();
                        let name = attribute.name();
                        let mut n = node(Kind::Attribute, Some(index));
                        n.namespace = name.namespace_uri().unwrap_or("").to_owned();
                        n.prefix = attribute.preferred_prefix().unwrap_or("").to_owned();
                        n.local = name.local_part().to_owned();
                        n.value = attribute.value().to_owned();
                        tree.nodes.push(n);
                        tree.nodes[index].attributes.push(a);
                    }
                    for c in element.children().into_iter().rev() {
                        elements.push((c, index));
                    }
                }
                sxd_document::dom::ChildOfElement::Text(text) => {
                    let index = tree.nodes.len();
                    // Adjacent text (e.g. around a comment) is one text node in XPath.
                    if let Some(&prev) = tree.nodes[parent].children.last()
                        && tree.nodes[prev].kind == Kind::Text
                        && prev + 1 == index
                    {
                        tree.nodes[prev].value.push_str(text.text());
                        continue;
                    }
                    let mut n = node(Kind::Text, Some(parent));
                    n.value = text.text().to_owned();
                    tree.nodes.push(n);
                    tree.nodes[parent].children.push(index);
                }
                _ => {}
            }
        }
        tree.close_subtrees();
        Some(tree)
    }

    /// A tree built directly (for the cost check's synthetic events).
    pub(crate) fn synthetic(breadth: usize, depth: usize) -> Tree {
        let mut tree = Tree {
            nodes: vec![node(Kind::Root, None)],
        };
        let mut open = vec![(0usize, 0usize)];
        while let Some((parent, level)) = open.pop() {
            let count = if parent == 0 { 1 } else { breadth };
            for i in 0..count {
                let index = tree.nodes.len();
                let mut n = node(Kind::Element, Some(parent));
                n.local = "e".into();
                tree.nodes.push(n);
                tree.nodes[parent].children.push(index);
                let a = tree.nodes.len();
                let mut attr = node(Kind::Attribute, Some(index));
                attr.local = "a".into();
                attr.value = i.to_string();
                tree.nodes.push(attr);
                tree.nodes[index].attributes.push(a);
                let t = tree.nodes.len();
                let mut text = node(Kind::Text, Some(index));
                text.value = i.to_string();
                tree.nodes.push(text);
                tree.nodes[index].children.push(t);
                if level + 1 < depth {
                    open.push((index, level + 1));
                }
            }
        }
        // Children were appended out of document order for deeper levels: renumber.
        tree.renumber();
        tree.close_subtrees();
        tree
    }

    /// Renumbers the nodes in document order.
    fn renumber(&mut self) {
        let mut order = Vec::with_capacity(self.nodes.len());
        let mut stack = vec![0usize];
        while let Some(i) = stack.pop() {
            order.push(i);
            let n = &self.nodes[i];
            for &c in n.children.iter().rev() {
                stack.push(c);
            }
            for &a in n.attributes.iter().rev() {
                stack.push(a);
            }
        }
        let mut new_index = vec![0usize; self.nodes.len()];
        for (new, &old) in order.iter().enumerate() {
            new_index[old] = new;
        }
        let mut nodes: Vec<Node> = order.iter().map(|&old| self.nodes[old].clone()).collect();
        for n in &mut nodes {
            n.parent = n.parent.map(|p| new_index[p]);
            for c in n.children.iter_mut().chain(n.attributes.iter_mut()) {
                *c = new_index[*c];
            }
        }
        self.nodes = nodes;
    }

    /// Sets each node's `last` (the end of its subtree), from the end backwards.
    fn close_subtrees(&mut self) {
        for i in (0..self.nodes.len()).rev() {
            let n = &self.nodes[i];
            let last = n
                .children
                .last()
                .map(|&c| self.nodes[c].last)
                .or_else(|| n.attributes.last().copied())
                .unwrap_or(i);
            self.nodes[i].last = last;
        }
    }

    /// The document element.
    pub(crate) fn document_element(&self) -> Option<usize> {
        self.nodes[0]
            .children
            .iter()
            .copied()
            .find(|&c| self.nodes[c].kind == Kind::Element)
    }
}

fn node(kind: Kind, parent: Option<usize>) -> Node {
    Node {
        kind,
        parent,
        namespace: String::new(),
        prefix: String::new(),
        local: String::new(),
        value: String::new(),
        attributes: Vec::new(),
        children: Vec::new(),
        last: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_in_document_order() {
        let tree = Tree::parse(r#"<a xmlns:p="urn:p" x="1"><p:b>t</p:b>u<c/></a>"#).unwrap();
        let kinds: Vec<(Kind, &str)> = tree
            .nodes
            .iter()
            .map(|n| {
                (
                    n.kind,
                    if n.kind == Kind::Text {
                        n.value.as_str()
                    } else {
                        n.local.as_str()
                    },
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                (Kind::Root, ""),
                (Kind::Element, "a"),
                (Kind::Attribute, "x"),
                (Kind::Element, "b"),
                (Kind::Text, "t"),
                (Kind::Text, "u"),
                (Kind::Element, "c"),
            ]
        );
        assert_eq!(tree.nodes[3].namespace, "urn:p");
        assert_eq!(tree.nodes[3].prefix, "p");
        assert_eq!(tree.nodes[1].last, 6);
        assert_eq!(tree.nodes[3].last, 4);
        let synthetic = Tree::synthetic(3, 3);
        // root, 1 + 3 + 9 elements with an attribute and a text each
        assert_eq!(synthetic.nodes.len(), 1 + 13 * 3);
        for (i, n) in synthetic.nodes.iter().enumerate() {
            if let Some(p) = n.parent {
                assert!(p < i);
            }
        }
    }
}
