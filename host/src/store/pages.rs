//! A page of rows and its total, in one statement where that is cheaper.
//!
//! Read a row at a time, the SQLite driver copies every column of every row on its own
//! thread and wakes the request's task once per row; at 100 rows a page those copies and
//! wake-ups were most of a list request's cost (docs/performance.md, goal 3). On SQLite
//! the database therefore renders the page as one JSON array of arrays
//! (`json_group_array`), in the list's order, with the list's total in the same
//! statement: one value, one copy, one wake-up, one round trip. PostgreSQL's driver has
//! no such hand-off, and rendering the page there (`json_agg`) measured slower than
//! reading the rows, so on PostgreSQL the rows are read as they are, the total riding along
//! on each of them in the same statement.

use super::{Order, Page, Store, StoreError};
use sea_orm::sea_query::{Alias, Expr, Query, SelectStatement};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, FromQueryResult, IdenStatic, Iterable,
    QueryOrder, QuerySelect, QueryTrait, Select,
};

/// The column of a PostgreSQL page that carries the list's total.
const PAGE_TOTAL: &str = "tocsin_page_total";

impl Store {
    /// The page `page` of the rows `rows` selects (filtered, not yet ordered), sorted by
    /// `order`, and the integer `total` yields (one row, a column named `total`). On
    /// SQLite, one statement: the entity's model must deserialize from a JSON array of
    /// its columns in declaration order.
    pub(in crate::store) async fn page_and_total<E>(
        &self,
        rows: Select<E>,
        order: &[(E::Column, Order)],
        page: Page,
        total: SelectStatement,
    ) -> Result<(Vec<E::Model>, u64), StoreError>
    where
        E: EntityTrait,
        E::Model: serde::de::DeserializeOwned,
    {
        #[derive(FromQueryResult)]
        struct Rendered {
            page: Option<String>,
            total: Option<i64>,
        }
        #[derive(FromQueryResult)]
        struct Total {
            total: Option<i64>,
        }
        let mut rows = rows;
        for (column, o) in order {
            rows = rows.order_by(
                *column,
                match o {
                    Order::Asc => sea_orm::Order::Asc,
                    Order::Desc => sea_orm::Order::Desc,
                },
            );
        }
        let rows = rows.offset(page.offset()).limit(page.limit);
        let backend = self.backend();
        let count = |t: Option<i64>| t.map_or(0, |t| u64::try_from(t).unwrap_or(0));
        if backend != DbBackend::Sqlite {
            // One round trip: the total rides along on every row as an uncorrelated
            // scalar subquery, which PostgreSQL evaluates once. Only a page with no rows
            // (past the end, or an empty list) asks for the total on its own.
            let mut statement = rows.into_query();
            statement.expr_as(
                Expr::SubQuery(None, Box::new(total.clone().into())),
                Alias::new(PAGE_TOTAL),
            );
            let found = self.db().query_all(&statement).await?;
            let page_total = match found.first() {
                Some(row) => row.try_get::<Option<i64>>("", PAGE_TOTAL)?,
                None => Total::find_by_statement(backend.build(&total))
                    .one(self.db())
                    .await?
                    .and_then(|t| t.total),
            };
            let models = found
                .iter()
                .map(|row| E::Model::from_query_result(row, ""))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok((models, count(page_total)));
        }
        let columns = E::Column::iter()
            .map(|c| {
                let name = c.as_str();
                // SQLite keeps flags as 0 and 1; the model wants true and false.
                if matches!(c.def().get_column_type(), sea_orm::ColumnType::Boolean) {
                    format!("json(CASE WHEN p.\"{name}\" THEN 'true' ELSE 'false' END)")
                } else {
                    format!("p.\"{name}\"")
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        // A subquery does not keep its ORDER BY: the aggregate repeats it.
        let ordered = order
            .iter()
            .map(|(c, o)| {
                let dir = match o {
                    Order::Asc => "ASC",
                    Order::Desc => "DESC",
                };
                format!("p.\"{}\" {dir}", c.as_str())
            })
            .collect::<Vec<_>>()
            .join(", ");
        let statement = Query::select()
            .expr_as(json_rows(&columns, &ordered), Alias::new("page"))
            .expr_as(
                Expr::SubQuery(None, Box::new(total.into())),
                Alias::new("total"),
            )
            .from_subquery(rows.into_query(), Alias::new("p"))
            .to_owned();
        let found = Rendered::find_by_statement(backend.build(&statement))
            .one(self.db())
            .await?;
        let (text, total) = found.map_or((None, None), |p| (p.page, p.total));
        let rows = decode_rows(text, || format!("a page of {}", E::default().as_str()))?;
        Ok((rows, count(total)))
    }
}

impl Store {
    /// Every row `rows` selects, in `order` (an `ORDER BY` of the selected column names,
    /// which `rows` must also be ordered by). On SQLite the database renders them as one
    /// JSON array of arrays, the columns in the order selected, so a page of thousands of
    /// rows crosses from the driver's thread as one value instead of one wake-up and one
    /// copy per row (a scrape of `/metrics` reads every monitor this way); `T` must
    /// deserialize from such an array. Elsewhere the rows are read as they are.
    pub(in crate::store) async fn rows_at_once<T>(
        &self,
        rows: SelectStatement,
        columns: &[&str],
        order: &str,
    ) -> Result<Vec<T>, StoreError>
    where
        T: FromQueryResult + serde::de::DeserializeOwned,
    {
        #[derive(FromQueryResult)]
        struct Rendered {
            page: Option<String>,
        }
        let backend = self.backend();
        if backend != DbBackend::Sqlite {
            return Ok(T::find_by_statement(backend.build(&rows))
                .all(self.db())
                .await?);
        }
        let columns = columns
            .iter()
            .map(|c| format!("p.\"{c}\""))
            .collect::<Vec<_>>()
            .join(", ");
        let statement = Query::select()
            .expr_as(json_rows(&columns, order), Alias::new("page"))
            .from_subquery(rows, Alias::new("p"))
            .to_owned();
        let found = Rendered::find_by_statement(backend.build(&statement))
            .one(self.db())
            .await?;
        decode_rows(found.and_then(|p| p.page), || {
            "rows read at once".to_string()
        })
    }
}

/// SQLite's aggregate that renders the rows of the subquery `p` as one JSON array of
/// arrays of `columns`, in `order` (a subquery does not keep its ORDER BY: the aggregate
/// repeats it).
fn json_rows(columns: &str, order: &str) -> Expr {
    Expr::cust(format!(
        "json_group_array(json_array({columns}) ORDER BY {order})"
    ))
}

/// The rows [`json_rows`] rendered; none when it found no rows. `what` names them in the
/// error for a rendering that does not read.
fn decode_rows<T: serde::de::DeserializeOwned>(
    text: Option<String>,
    what: impl FnOnce() -> String,
) -> Result<Vec<T>, StoreError> {
    match text {
        Some(text) => {
            serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(format!("{}: {e}", what())))
        }
        None => Ok(Vec::new()),
    }
}

/// How many rows `rows` selects (as `total`), for [`Store::page_and_total`].
pub(in crate::store) fn count_of<E: EntityTrait>(rows: Select<E>) -> SelectStatement {
    Query::select()
        .expr_as(Expr::cust("COUNT(*)"), Alias::new("total"))
        .from_subquery(rows.into_query(), Alias::new("c"))
        .to_owned()
}
